import type { FastifyInstance } from 'fastify';

/**
 * `GET /healthz` for load balancers and supervisors (docs/operations.md, "Health"), without
 * credentials: 200 and the health report while the coordinator can serve, 503 `unavailable`
 * when its database does not answer or it is shutting down. Never cached; left out of the API
 * document (an operations endpoint, as `/metrics`).
 */
export async function healthRoutes(app: FastifyInstance): Promise<void> {
  app.get('/healthz', { schema: { hide: true } }, async (_request, reply) => {
    const report = await app.ctx.health.report();
    void reply.header('cache-control', 'no-store');
    return report;
  });
}

import type { FastifyInstance } from 'fastify';

export async function openapiRoutes(app: FastifyInstance): Promise<void> {
  app.get(
    '/openapi.json',
    { schema: { hide: true, response: { 200: { type: 'object', additionalProperties: true } } } },
    // The server URL is read per call: with --port 0 the public URL is only known once listening.
    async () => ({ ...app.swagger(), servers: [{ url: app.ctx.config.publicUrl }] }),
  );
}

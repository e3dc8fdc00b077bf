import type { FastifyInstance } from 'fastify';

export async function openapiRoutes(app: FastifyInstance): Promise<void> {
  app.get(
    '/openapi.json',
    { schema: { hide: true, response: { 200: { type: 'object', additionalProperties: true } } } },
    async () => app.swagger(),
  );
}

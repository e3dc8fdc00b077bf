import type { FastifyInstance } from 'fastify';
import { servedDocument } from '../openapi-document.js';

export async function openapiRoutes(app: FastifyInstance): Promise<void> {
  app.get(
    '/openapi.json',
    { schema: { hide: true, response: { 200: { type: 'object', additionalProperties: true } } } },
    // Serialized once (openapi-document.ts), sent as it is.
    async (_request, reply) => reply.type('application/json; charset=utf-8').send(servedDocument(app).json),
  );
}

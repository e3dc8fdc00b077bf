import type { FastifyInstance } from 'fastify';

/**
 * In this route group bodies are kept as raw bytes (`request.rawBody`) and parsed by the routes
 * once the provider's signature over those bytes has been checked: Slack sends forms and JSON,
 * Discord JSON, and an unsigned body is never parsed at all.
 */
export function keepRawBodies(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (request, body, done) => {
    request.rawBody = body as Buffer;
    done(null, undefined);
  });
}

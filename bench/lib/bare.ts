import Fastify, { type FastifyInstance } from 'fastify';

export interface BareServer {
  app: FastifyInstance;
  url: string;
  close(): Promise<void>;
}

/**
 * The baseline: a bare Fastify 5 app (no logger, no hooks, no auth, no database) with one GET
 * route answering a fixed payload through a response schema, i.e. the same fast-json-stringify
 * serialization the coordinator route pays for. Everything the real route costs beyond this is
 * what a benchmark measures.
 */
export async function startBareJsonServer(
  route: string,
  payload: unknown,
  responseSchema: object,
): Promise<BareServer> {
  const app = Fastify({ logger: false });
  app.get(route, { schema: { response: { 200: responseSchema } } }, async () => payload);
  const url = await app.listen({ port: 0, host: '127.0.0.1' });
  return { app, url, close: () => app.close() };
}

/**
 * The baseline of a POST route: a bare Fastify 5 app whose one POST route parses the JSON body
 * (Fastify's own parser, no schema) and answers a fixed payload with `statusCode` through a
 * response schema, i.e. the same body parsing and serialization the coordinator route pays for.
 */
export async function startBarePostServer(
  route: string,
  statusCode: number,
  payload: unknown,
  responseSchema: object,
): Promise<BareServer> {
  const app = Fastify({ logger: false });
  app.post(route, { schema: { response: { [statusCode]: responseSchema } } }, async (_request, reply) =>
    reply.code(statusCode).send(payload),
  );
  const url = await app.listen({ port: 0, host: '127.0.0.1' });
  return { app, url, close: () => app.close() };
}

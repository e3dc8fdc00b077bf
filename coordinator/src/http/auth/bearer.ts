import type { FastifyRequest } from 'fastify';

/**
 * The credential of an `Authorization: Bearer <value>` header, or null. Node keeps the first of
 * two Authorization headers and drops the other: a request that sends two carries none, so that
 * the coordinator never reads another credential than a proxy in front of it would.
 */
export function bearerToken(request: FastifyRequest): string | null {
  if ((request.raw.headersDistinct.authorization?.length ?? 0) > 1) return null;
  const header = request.headers.authorization;
  if (typeof header !== 'string') return null;
  const match = /^Bearer[ ]+(\S+)\s*$/i.exec(header);
  return match ? match[1]! : null;
}

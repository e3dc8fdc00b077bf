import type { FastifyRequest } from 'fastify';
import { headerValues } from '../header-values.js';

/**
 * The credential of an `Authorization: Bearer <value>` header, or null. Node keeps the first of
 * two Authorization headers and drops the other: a request that sends two carries none, so that
 * the coordinator never reads another credential than a proxy in front of it would.
 */
export function bearerToken(request: FastifyRequest): string | null {
  if (authorizationSentTwice(request)) return null;
  const header = request.headers.authorization;
  if (typeof header !== 'string') return null;
  const match = /^Bearer[ ]+(\S+)\s*$/i.exec(header);
  return match ? match[1]! : null;
}

/** Whether the request has more than one Authorization header (and so no bearer credential). */
export function authorizationSentTwice(request: FastifyRequest): boolean {
  return headerValues(request, 'authorization').length > 1;
}

/**
 * The 401 of a request with two Authorization headers, which `bearerToken` takes for none: the
 * caller did send a credential (a proxy or a client's default header may have added the other),
 * and "send Authorization: Bearer ..." would not tell them what is wrong.
 */
export const AUTHORIZATION_SENT_TWICE =
  'The Authorization header was sent more than once, so none of them is read: send it once, with one credential';

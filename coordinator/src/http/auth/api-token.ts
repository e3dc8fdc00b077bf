import type { FastifyRequest } from 'fastify';
import { API_TOKEN_PREFIX } from '@drover/shared';
import type { AuthenticatingApiToken } from '../../domain/model/api-tokens.js';
import { findApiTokenByHash } from '../../domain/tokens/api-token-cache.js';
import { unauthorized } from '../../errors.js';
import { hashBearerSecret } from '../../util/secrets.js';
import { AUTHORIZATION_SENT_TWICE, authorizationSentTwice, bearerToken } from './bearer.js';

/**
 * The API token of a public-API request; 401 when missing, unknown, revoked or expired, or when
 * the user who issued it is no longer a member of its organization (a token never outlives its
 * issuer's access).
 */
export async function requireApiToken(
  request: FastifyRequest,
  /** The change counter as already read for this request, when the caller consults other caches too. */
  generation?: number,
): Promise<AuthenticatingApiToken> {
  const plaintext = bearerToken(request);
  if (!plaintext) {
    throw unauthorized(
      authorizationSentTwice(request) ? AUTHORIZATION_SENT_TWICE : 'Send an API token as Authorization: Bearer <token>',
    );
  }
  if (!plaintext.startsWith(API_TOKEN_PREFIX) || plaintext.length > 200) throw unauthorized('The API token is invalid');
  const { repos, clock } = request.server.ctx;
  const token = await findApiTokenByHash(repos, hashBearerSecret(plaintext), generation);
  if (!token) throw unauthorized('The API token is invalid');
  if (token.revokedAt !== null) throw unauthorized('The API token has been revoked');
  if (token.expiresAt !== null && Date.parse(token.expiresAt) <= clock.now()) {
    throw unauthorized('The API token has expired');
  }
  if (token.issuerRole === null) {
    throw unauthorized("The API token's issuer is no longer a member of its organization");
  }
  return token;
}

/** A public-API request's caller, as the group's hook authenticated it. */
export interface ApiCaller {
  token: AuthenticatingApiToken;
  /** The change counter, read once for the request: every memory cache of the request uses it. */
  generation: number;
}

const callers = new WeakMap<FastifyRequest, ApiCaller>();

/**
 * The `onRequest` hook of the public API group (http/routes/public/index.ts): every route in it
 * needs an API token, checked before anything else of the request; a route then reads the
 * caller with `apiCallerOf`.
 */
export async function apiTokenHook(request: FastifyRequest): Promise<void> {
  const generation = await request.server.ctx.repos.changeCounter.generation();
  callers.set(request, { token: await requireApiToken(request, generation), generation });
}

/** The caller `apiTokenHook` authenticated; a route outside the public group has none. */
export function apiCallerOf(request: FastifyRequest): ApiCaller {
  const caller = callers.get(request);
  if (!caller) throw new Error(`${request.routeOptions.url} is not in the public API group: it has no API token`);
  return caller;
}

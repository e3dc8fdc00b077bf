import type { FastifyRequest } from 'fastify';
import { API_TOKEN_PREFIX } from '@drover/shared';
import type { AuthenticatingApiToken } from '../../db/repositories/api-tokens.js';
import { findApiTokenByHash } from '../../domain/api-token-cache.js';
import { unauthorized } from '../../errors.js';
import { hashBearerSecret } from '../../util/secrets.js';
import { bearerToken } from './bearer.js';

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
  if (!plaintext) throw unauthorized('Send an API token as Authorization: Bearer <token>');
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

import { isUuid } from '../../util/ids.js';
import type { FastifyRequest } from 'fastify';
import type { Role } from '../../domain/model/orgs.js';
import { forbidden, notFound, unauthorized } from '../../errors.js';
import { API_TOKEN_PREFIX } from '@drover/shared';
import { bearerToken } from './bearer.js';
import { refuseCrossSiteChange } from './cross-site.js';
import { sessionCookieOf } from './session-cookie.js';
import { oncePerRequest } from './once-per-request.js';

export interface SessionUser {
  userId: string;
  email: string;
  /** When the session ends (ISO 8601). */
  expiresAt: string;
}

export interface OrgAccess extends SessionUser {
  orgId: string;
  role: Role;
}

/**
 * The signed-in user of a dashboard request, or 401: the session JWT in the Authorization header
 * (API clients) or in the session cookie (the dashboard in a browser; a change made with the
 * cookie must also pass the cross-site checks, or 403). Every
 * dashboard route checks it in `onRequest` (`sessionHook`), before its body is read, so a caller
 * without a session gets 401 whatever it sent; the handler's call returns the same answer.
 */
export const requireSession: (request: FastifyRequest) => Promise<SessionUser> = oncePerRequest(authenticate);

/** `requireSession` as a route hook. */
export async function sessionHook(request: FastifyRequest): Promise<void> {
  await requireSession(request);
}

async function authenticate(request: FastifyRequest): Promise<SessionUser> {
  const bearer = bearerToken(request);
  const token = bearer ?? sessionCookieOf(request);
  if (!token) throw unauthorized('Sign in first: send Authorization: Bearer <session token>');
  if (bearer && token.startsWith(API_TOKEN_PREFIX)) {
    throw unauthorized('API tokens cannot call dashboard endpoints; sign in with POST /v1/auth/login');
  }
  const session = await request.server.ctx.sessions.verify(token);
  if (!session) throw unauthorized('The session token is invalid, expired or signed out');
  if (!bearer) refuseCrossSiteChange(request);
  return { userId: session.userId, email: session.user.email, expiresAt: session.expiresAt };
}

/**
 * A signed-in user's access to an organization. Someone who is not a member gets 404 (the
 * organization's existence does not leak); a member calling an owner-only endpoint gets 403.
 */
export async function requireOrgRole(
  request: FastifyRequest,
  orgId: string,
  needs: 'member' | 'owner' = 'member',
): Promise<OrgAccess> {
  const session = await requireSession(request);
  // Checked before its schema is (refusal order, refusal-order.ts): a value no organization's id
  // can have finds none, without asking the database (PostgreSQL refuses some, such as a NUL).
  const role = isUuid(orgId) ? await request.server.ctx.repos.orgs.roleOf(orgId, session.userId) : null;
  if (!role) throw notFound('Organization');
  if (needs === 'owner' && role !== 'owner') throw forbidden('Only an owner of the organization can do this');
  return { ...session, orgId, role };
}

import { isUuid } from '../../util/ids.js';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { requirePermission, type Action } from '../../domain/orgs/permissions.js';
import type { Role } from '../../domain/model/orgs.js';
import { notFound, unauthorized } from '../../errors.js';
import { API_TOKEN_PREFIX } from '@drover/shared';
import { AUTHORIZATION_SENT_TWICE, authorizationSentTwice, bearerToken } from './bearer.js';
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
  if (!token) {
    throw unauthorized(
      authorizationSentTwice(request)
        ? AUTHORIZATION_SENT_TWICE
        : 'Sign in first: send Authorization: Bearer <session token>',
    );
  }
  if (bearer && token.startsWith(API_TOKEN_PREFIX)) {
    throw unauthorized('API tokens cannot call dashboard endpoints; sign in with POST /v1/auth/login');
  }
  const session = await request.server.ctx.sessions.verify(token);
  if (!session) throw unauthorized('The session token is invalid, expired or signed out');
  if (!bearer) refuseCrossSiteChange(request);
  return { userId: session.userId, email: session.user.email, expiresAt: session.expiresAt };
}

/**
 * A signed-in user's access to the organization of the path, for the action the route declares
 * (`config.action`; a route that declares none reads: `org.read`). Someone who is not a member
 * gets 404 (the organization's existence does not leak); a member whose role may not take the
 * action gets 403 (domain/orgs/permissions.ts). The management group checks it in
 * `preValidation` (`orgAccessHook`), before the body is validated, and the handler's call returns
 * the same answer.
 */
export function requireOrgRole(request: FastifyRequest, orgId: string): Promise<OrgAccess> {
  let answers = orgAnswers.get(request);
  if (!answers) orgAnswers.set(request, (answers = new Map()));
  let answer = answers.get(orgId);
  if (!answer) {
    answer = orgAccess(request, orgId, request.routeOptions.config.action ?? 'org.read');
    answers.set(orgId, answer);
  }
  return answer;
}

const orgAnswers = new WeakMap<FastifyRequest, Map<string, Promise<OrgAccess>>>();

async function orgAccess(request: FastifyRequest, orgId: string, action: Action): Promise<OrgAccess> {
  const session = await requireSession(request);
  // Checked before its schema is (refusal order, refusal-order.ts): a value no organization's id
  // can have finds none, without asking the database (PostgreSQL refuses some, such as a NUL).
  const role = isUuid(orgId) ? await request.server.ctx.repos.orgs.roleOf(orgId, session.userId) : null;
  if (!role) throw notFound('Organization');
  requirePermission(role, action);
  return { ...session, orgId, role };
}

/**
 * The management group's check of every route under `/orgs/:orgId`: the caller's role takes
 * the route's action, before its body is validated. A route that changes something must declare
 * its action: registering one without is a programming error, refused at start.
 */
export function orgAccessHook(group: FastifyInstance): void {
  group.addHook('onRoute', (route) => {
    if (!route.url.includes('/orgs/:orgId')) return;
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    if (route.config?.action === undefined && methods.some((m) => m !== 'GET' && m !== 'HEAD')) {
      throw new Error(`${methods.join(',')} ${route.url} changes something: declare its action (config.action)`);
    }
    const check = async (request: FastifyRequest) => {
      await requireOrgRole(request, (request.params as { orgId: string }).orgId);
    };
    route.preValidation = [check, ...(route.preValidation === undefined ? [] : [route.preValidation].flat())];
  });
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** What the route does in an organization, which the caller's role must allow (domain/orgs/permissions.ts). */
    action?: Action;
  }
}

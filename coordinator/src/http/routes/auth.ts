import type { FastifyInstance } from 'fastify';
import { MAX_PASSWORD_LENGTH } from '../../domain/auth/passwords.js';
import { bearerToken } from '../auth/bearer.js';
import { refuseCrossSiteChange, refuseCrossSiteSignIn } from '../auth/cross-site.js';
import { requireSession, sessionHook } from '../auth/session.js';
import { clearSessionCookie, sessionCookieOf, setSessionCookie } from '../auth/session-cookie.js';
import { SESSION_SECURITY } from './route-group.js';
import { errorResponses, timestamp, uuid } from '../schemas/common.js';
import { unauthorized } from '../../errors.js';
import { userExample } from '../schemas/examples.js';
import { sessionExample, signInAnswerExample } from '../schemas/examples.js';
import { named } from '../schemas/named.js';
import { noQuery } from '../schemas/management.js';

export const UserSchema = named('User', {
  type: 'object',
  examples: [userExample],
  required: ['id', 'email'],
  properties: { id: uuid, email: { type: 'string' }, createdAt: timestamp },
} as const);

/** The signed-in user and when the session ends. */
const SessionSchema = named('Session', {
  type: 'object',
  required: ['user', 'expiresAt'],
  properties: { user: UserSchema, expiresAt: timestamp },
  examples: [sessionExample],
} as const);

export const SignInAnswerSchema = named('SignInAnswer', {
  type: 'object',
  required: ['token', 'expiresAt', 'user'],
  properties: { token: { type: 'string' }, expiresAt: timestamp, user: UserSchema },
  examples: [signInAnswerExample],
} as const);

export async function authRoutes(app: FastifyInstance): Promise<void> {
  app.post<{ Body: { email: string; password: string } }>(
    '/auth/login',
    {
      schema: {
        operationId: 'signIn',
        summary: 'Sign in to the dashboard; returns a session JWT and sets it as the session cookie',
        description:
          'The answer carries the session JWT (send it as `Authorization: Bearer <token>`) and sets it as the ' +
          'HttpOnly, SameSite=Strict cookie `drover_session` that the dashboard uses. A sign-in whose `Origin` is ' +
          'another site is refused (403).',
        tags: ['dashboard'],
        querystring: noQuery,
        security: [],
        body: {
          type: 'object',
          additionalProperties: false,
          required: ['email', 'password'],
          examples: [{ email: 'alice@example.com', password: 'correct horse battery staple' }],
          properties: {
            email: { type: 'string', minLength: 1, maxLength: 320 },
            password: { type: 'string', minLength: 1, maxLength: MAX_PASSWORD_LENGTH },
          },
        },
        response: { 200: SignInAnswerSchema, ...errorResponses(401, 403, 422, 429) },
      },
      onRequest: async (request) => refuseCrossSiteSignIn(request),
    },
    async (request, reply) => {
      const signedIn = await app.ctx.signIn.signIn(request.body.email, request.body.password, request.ip);
      setSessionCookie(request, reply, signedIn.token, signedIn.expiresAt);
      return signedIn;
    },
  );

  app.post(
    '/auth/logout',
    {
      schema: {
        operationId: 'signOut',
        summary:
          'Sign out: ends the session of the cookie or of the bearer session JWT for good, and clears the cookie',
        tags: ['dashboard'],
        querystring: noQuery,
        security: [],
        response: { 204: { type: 'null', description: 'The cookie is cleared' }, ...errorResponses(403) },
      },
      // With the cookie, signing out is a change like any other: no other site may do it.
      onRequest: async (request) => {
        if (sessionCookieOf(request)) refuseCrossSiteChange(request);
      },
    },
    async (request, reply) => {
      const token = bearerToken(request) ?? sessionCookieOf(request);
      if (token) await app.ctx.sessions.signOut(token);
      clearSessionCookie(request, reply);
      return reply.status(204).send();
    },
  );

  app.get(
    '/auth/session',
    {
      schema: {
        operationId: 'getSession',
        summary: 'The signed-in user and when the session ends',
        tags: ['dashboard'],
        querystring: noQuery,
        security: SESSION_SECURITY,
        response: {
          200: SessionSchema,
          ...errorResponses(401),
        },
      },
      onRequest: sessionHook,
    },
    async (request) => {
      const { userId, expiresAt } = await requireSession(request);
      const user = await app.ctx.repos.users.findById(userId);
      if (!user) throw unauthorized('The session user no longer exists');
      return { user: { id: user.id, email: user.email, createdAt: user.createdAt }, expiresAt };
    },
  );

  app.post<{ Body: { currentPassword: string; newPassword: string } }>(
    '/auth/password',
    {
      schema: {
        operationId: 'changePassword',
        summary: 'Change your password; every other session of yours ends, and this one is renewed',
        description:
          'Needs the current password (a wrong one is 422 and counts as a failed sign-in, so the sign-in lockouts ' +
          'apply). Every session issued before ends on every coordinator, this one included: the answer is a new ' +
          'session, as a sign-in answers, and with the cookie the cookie is replaced. API tokens are not sessions ' +
          'and keep working.',
        tags: ['dashboard'],
        querystring: noQuery,
        security: SESSION_SECURITY,
        body: {
          type: 'object',
          additionalProperties: false,
          required: ['currentPassword', 'newPassword'],
          examples: [{ currentPassword: 'correct horse battery staple', newPassword: 'a new long passphrase' }],
          properties: {
            currentPassword: { type: 'string', minLength: 1, maxLength: MAX_PASSWORD_LENGTH },
            newPassword: { type: 'string', maxLength: MAX_PASSWORD_LENGTH },
          },
        },
        response: { 200: SignInAnswerSchema, ...errorResponses(401, 403, 422, 429) },
      },
      onRequest: sessionHook,
    },
    async (request, reply) => {
      const { userId } = await requireSession(request);
      const signedIn = await app.ctx.account.changePassword(userId, request.body, request.ip);
      if (bearerToken(request) === null) setSessionCookie(request, reply, signedIn.token, signedIn.expiresAt);
      return signedIn;
    },
  );

  app.post(
    '/auth/logout-everywhere',
    {
      schema: {
        operationId: 'signOutEverywhere',
        summary: 'Sign out everywhere: every session of yours ends, this one included, and the cookie is cleared',
        description:
          'Every browser and script signed in as you is signed out, on every coordinator sharing the database. ' +
          'API tokens are not sessions and keep working (revoke them on their own).',
        tags: ['dashboard'],
        querystring: noQuery,
        security: SESSION_SECURITY,
        response: {
          204: { type: 'null', description: 'Every session ended; the cookie is cleared' },
          ...errorResponses(401, 403),
        },
      },
      onRequest: sessionHook,
    },
    async (request, reply) => {
      const { userId } = await requireSession(request);
      await app.ctx.account.signOutEverywhere(userId);
      clearSessionCookie(request, reply);
      return reply.status(204).send();
    },
  );
}

import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { OidcSignInService } from '../../domain/auth/oidc-sign-in.js';
import { OIDC_STATE_TTL_MS } from '../../domain/model/oidc-states.js';
import { AppError, notFound } from '../../errors.js';
import { hostCookieName, isSecure, setSessionCookie } from '../auth/session-cookie.js';
import { prefersHtml } from './dashboard/accepts-html.js';
import { errorResponses } from '../schemas/common.js';
import { named } from '../schemas/named.js';

/**
 * The browser's key for its single sign-on in progress: SameSite=Lax, so that the provider's
 * redirect back (a top-level GET from its site) carries it. Over HTTP only the sign-in's paths get
 * it; over HTTPS it is `__Host-drover_oidc`, for the path `/` (the prefix needs it), so that a site
 * on a sibling subdomain cannot plant its own sign-in's key and sign the browser in as itself.
 */
const OIDC_COOKIE = 'drover_oidc';
/**
 * Why this browser's last single sign-on was refused, for the sign-in page to show: a cookie the
 * coordinator set, not text from the address (a link anyone can write would put their words on
 * this site's sign-in page).
 */
const REFUSAL_COOKIE = 'drover_sso_refusal';
const REFUSAL_TTL_SECONDS = 300;
const COOKIE_PATH = '/v1/auth/oidc';

const SignInMethodsSchema = named('SignInMethods', {
  type: 'object',
  examples: [{ password: true, oidc: true }],
  required: ['password', 'oidc'],
  properties: {
    password: { type: 'boolean', description: 'whether `POST /v1/auth/login` signs in' },
    oidc: { type: 'boolean', description: 'whether single sign-on (`GET /v1/auth/oidc/start`) is set up' },
  },
} as const);

// The longest reason is about 300 characters (a provider's description is cut at 200).
const MAX_REFUSAL_CHARS = 1000;
const OidcRefusalSchema = named('OidcRefusal', {
  type: 'object',
  examples: [
    {
      message:
        'Single sign-on did not complete: the email domain elsewhere.test is not allowed to sign in here (allowed: example.test)',
    },
  ],
  required: ['message'],
  properties: {
    message: { type: ['string', 'null'], description: 'the reason, as the JSON answer `401 sso_failed` gives it' },
  },
} as const);

const redirect = (description: string) => ({ type: 'null', description }) as const;

function oidcOf(request: FastifyRequest): OidcSignInService {
  const service = request.server.ctx.oidcSignIn;
  if (!service) throw notFound('Single sign-on (not set up on this coordinator)');
  return service;
}

/**
 * A refusal, for a browser: back to the sign-in page (`/login?sso=refused`), the message in the
 * short-lived cookie `GET /v1/auth/oidc/refusal` reads; for any other client, the error as JSON.
 */
async function answerRefusal(request: FastifyRequest, reply: FastifyReply, error: unknown): Promise<FastifyReply> {
  if (!(error instanceof AppError) || !prefersHtml(request)) throw error;
  request.log.info({ code: error.code, reason: error.message }, 'single sign-on refused');
  void reply.setCookie(hostCookieName(request, REFUSAL_COOKIE), error.message, {
    ...cookieOptions(request),
    maxAge: REFUSAL_TTL_SECONDS,
  });
  return reply.redirect('/login?sso=refused', 303);
}

/** Single sign-on (docs/sso.md) and the sign-in methods the sign-in page offers. */
export async function oidcAuthRoutes(app: FastifyInstance): Promise<void> {
  app.get(
    '/auth/methods',
    {
      schema: {
        operationId: 'getSignInMethods',
        summary: 'The sign-in methods this coordinator offers (no credentials needed): passwords, single sign-on',
        tags: ['dashboard'],
        security: [],
        querystring: { type: 'object', additionalProperties: false, properties: {} },
        response: { 200: SignInMethodsSchema, ...errorResponses(422) },
      },
    },
    async () => ({ password: app.ctx.config.signIn.password, oidc: app.ctx.oidcSignIn !== null }),
  );

  app.get(
    '/auth/oidc/refusal',
    {
      schema: {
        operationId: 'getOidcRefusal',
        summary: "Why this browser's last single sign-on was refused, for the sign-in page (no credentials needed)",
        description:
          'Read from the short-lived cookie the refusal set (five minutes); `null` when there is none. The sign-in ' +
          'page shows it when the coordinator sent the browser back with `?sso=refused`.',
        tags: ['dashboard'],
        security: [],
        querystring: { type: 'object', additionalProperties: false, properties: {} },
        response: { 200: OidcRefusalSchema, ...errorResponses(422) },
      },
    },
    async (request) => {
      const message = request.cookies[hostCookieName(request, REFUSAL_COOKIE)];
      return { message: message ? message.slice(0, MAX_REFUSAL_CHARS) : null };
    },
  );

  app.get<{ Querystring: { next?: string } }>(
    '/auth/oidc/start',
    {
      schema: {
        operationId: 'startOidcSignIn',
        summary: 'Single sign-on: redirects the browser to the OpenID provider (authorization code flow with PKCE)',
        description:
          'Sets the short-lived cookie `drover_oidc` (`__Host-drover_oidc` over HTTPS) that binds the sign-in to this ' +
          'browser. `next` is the dashboard path to go to once signed in (a path of this site; default `/`). 404 when ' +
          'single sign-on is not set up; 429 when over 30 sign-ins were started from the address in ten minutes and ' +
          'not finished; 503 with `Retry-After` when 10,000 sign-ins from all addresses are in progress (or the ' +
          'provider cannot be reached).',
        tags: ['dashboard'],
        security: [],
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: { next: { type: 'string', maxLength: 2048 } },
        },
        response: {
          302: redirect("to the provider's authorization endpoint"),
          303: redirect('a browser, refused: to the sign-in page (`/login?sso=refused`)'),
          ...errorResponses(404, 422, 429, 503),
        },
      },
    },
    async (request, reply) => {
      try {
        const started = await oidcOf(request).start(request.query.next, browserKeyOf(request), request.ip);
        void reply.setCookie(hostCookieName(request, OIDC_COOKIE), started.browserKey, cookieOptions(request));
        void reply.clearCookie(hostCookieName(request, REFUSAL_COOKIE), cookieOptions(request));
        return reply.redirect(started.url, 302);
      } catch (error) {
        return answerRefusal(request, reply, error);
      }
    },
  );

  app.get<{ Querystring: Record<string, string> }>(
    '/auth/oidc/callback',
    {
      schema: {
        operationId: 'finishOidcSignIn',
        summary:
          "Single sign-on: where the provider sends the browser back; signs in and redirects to `next` (the provider's redirect URI)",
        description:
          "Verifies the ID token (signature by the provider's JWKS, issuer, audience, expiry, nonce), finds or creates " +
          'the user by their verified email, applies the role map, sets the same session cookie as `POST ' +
          '/v1/auth/login`, and redirects to the `next` given to the start. A refusal is `401 sso_failed` (a browser ' +
          'is sent to the sign-in page instead, and `GET /v1/auth/oidc/refusal` gives it the message).',
        tags: ['dashboard'],
        security: [],
        querystring: {
          type: 'object',
          // Providers add their own parameters (session_state, ...): kept, passed on as sent.
          properties: {
            code: { type: 'string', maxLength: 4096 },
            state: { type: 'string', maxLength: 256 },
            iss: { type: 'string', maxLength: 2048 },
            error: { type: 'string', maxLength: 256 },
            error_description: { type: 'string', maxLength: 2048 },
          },
        },
        response: {
          303: redirect('signed in: to `next`; or, for a browser, refused: to the sign-in page (`/login?sso=refused`)'),
          ...errorResponses(401, 404, 503),
        },
      },
    },
    async (request, reply) => {
      try {
        const service = oidcOf(request);
        const query = request.raw.url?.split('?')[1] ?? '';
        const callback = new URL(`${service.redirectUri()}?${query}`);
        const signedIn = await service.finish(callback, browserKeyOf(request), request.ip);
        void reply.clearCookie(hostCookieName(request, OIDC_COOKIE), cookieOptions(request));
        void reply.clearCookie(hostCookieName(request, REFUSAL_COOKIE), cookieOptions(request));
        setSessionCookie(request, reply, signedIn.token, signedIn.expiresAt);
        return reply.redirect(signedIn.next, 303);
      } catch (error) {
        void reply.clearCookie(hostCookieName(request, OIDC_COOKIE), cookieOptions(request));
        return answerRefusal(request, reply, error);
      }
    },
  );
}

/** The sign-in's key this browser holds, by the name of the scheme in use only. */
function browserKeyOf(request: FastifyRequest): string | null {
  return request.cookies[hostCookieName(request, OIDC_COOKIE)] ?? null;
}

function cookieOptions(request: FastifyRequest) {
  const secure = isSecure(request);
  return {
    path: secure ? '/' : COOKIE_PATH,
    httpOnly: true,
    sameSite: 'lax',
    secure,
    maxAge: OIDC_STATE_TTL_MS / 1000,
  } as const;
}

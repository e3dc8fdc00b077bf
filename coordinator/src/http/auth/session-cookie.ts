import type { CookieSerializeOptions } from '@fastify/cookie';
import type { FastifyReply, FastifyRequest } from 'fastify';

/**
 * The dashboard's session cookie: the same session JWT that `POST /v1/auth/login` returns,
 * HttpOnly (no script reads it), SameSite=Strict (no other site's page sends it), and Secure
 * when the dashboard is reached over HTTPS (the request's, or DROVER_PUBLIC_URL's, scheme).
 */
export const SESSION_COOKIE = 'drover_session';

function cookieOptions(request: FastifyRequest): CookieSerializeOptions {
  const secure = request.protocol === 'https' || request.server.ctx.config.publicUrl.startsWith('https:');
  return { path: '/', httpOnly: true, sameSite: 'strict', secure };
}

export function setSessionCookie(request: FastifyRequest, reply: FastifyReply, token: string, expiresAt: string): void {
  void reply.setCookie(SESSION_COOKIE, token, { ...cookieOptions(request), expires: new Date(expiresAt) });
}

export function clearSessionCookie(request: FastifyRequest, reply: FastifyReply): void {
  void reply.clearCookie(SESSION_COOKIE, cookieOptions(request));
}

/** The session token carried by the cookie, or null. */
export function sessionCookieOf(request: FastifyRequest): string | null {
  const value = request.cookies[SESSION_COOKIE];
  return typeof value === 'string' && value !== '' ? value : null;
}

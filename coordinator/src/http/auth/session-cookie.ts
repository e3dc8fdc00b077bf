import type { CookieSerializeOptions } from '@fastify/cookie';
import type { FastifyReply, FastifyRequest } from 'fastify';

/**
 * The dashboard's session cookie: the same session JWT that `POST /v1/auth/login` returns,
 * HttpOnly (no script reads it), SameSite=Strict (no other site's page sends it), and Secure
 * when the dashboard is reached over HTTPS (the request's, or DROVER_PUBLIC_URL's, scheme).
 * Over HTTPS its name has the `__Host-` prefix, which browsers accept only from this very host,
 * Secure, for the path `/`: a site on a sibling subdomain cannot plant a session of its own
 * choosing in the dashboard (signing the operator in as someone else). Only the name of the
 * scheme in use is read.
 */
export const SESSION_COOKIE = 'drover_session';
export const SECURE_SESSION_COOKIE = `__Host-${SESSION_COOKIE}`;

/** Whether the dashboard is reached over HTTPS: the request's, or DROVER_PUBLIC_URL's, scheme. */
export function isSecure(request: FastifyRequest): boolean {
  return request.protocol === 'https' || request.server.ctx.config.publicUrl.startsWith('https:');
}

/**
 * A cookie's name for this request: with the `__Host-` prefix over HTTPS (the cookie must then be
 * Secure, for the path `/`, without a domain), so that no sibling subdomain can plant it.
 */
export const hostCookieName = (request: FastifyRequest, name: string): string =>
  isSecure(request) ? `__Host-${name}` : name;

function cookieOptions(request: FastifyRequest): CookieSerializeOptions {
  return { path: '/', httpOnly: true, sameSite: 'strict', secure: isSecure(request) };
}

const nameOf = (request: FastifyRequest): string => hostCookieName(request, SESSION_COOKIE);

export function setSessionCookie(request: FastifyRequest, reply: FastifyReply, token: string, expiresAt: string): void {
  void reply.setCookie(nameOf(request), token, { ...cookieOptions(request), expires: new Date(expiresAt) });
}

export function clearSessionCookie(request: FastifyRequest, reply: FastifyReply): void {
  void reply.clearCookie(nameOf(request), cookieOptions(request));
}

/** The session token carried by the cookie, or null. */
export function sessionCookieOf(request: FastifyRequest): string | null {
  const value = request.cookies[nameOf(request)];
  return typeof value === 'string' && value !== '' ? value : null;
}

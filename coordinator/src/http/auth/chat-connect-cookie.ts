import type { FastifyReply, FastifyRequest } from 'fastify';
import { OAUTH_STATE_TTL_MS } from '../../domain/chat/integrations.js';

/**
 * The cookie that binds a chat workspace's OAuth flow to the browser that started it
 * (docs/chat.md, "Connecting a workspace"): a random key, set when an owner presses Connect and
 * required, with the same owner's session, when the dashboard finishes the flow. HttpOnly,
 * SameSite=Strict (it is only needed by the dashboard's own call that finishes the flow, made from
 * its page once the provider sent the browser back), Secure over HTTPS, sent only to the API
 * (`/v1/`), and it ends with the flow's ten minutes.
 */
export const CHAT_CONNECT_COOKIE = 'drover_chat_connect';

export function setChatConnectCookie(request: FastifyRequest, reply: FastifyReply, browserKey: string): void {
  const secure = request.protocol === 'https' || request.server.ctx.config.publicUrl.startsWith('https:');
  void reply.setCookie(CHAT_CONNECT_COOKIE, browserKey, {
    path: '/v1/',
    httpOnly: true,
    sameSite: 'strict',
    secure,
    maxAge: OAUTH_STATE_TTL_MS / 1000,
  });
}

/** The browser key the request's connect cookie holds, or null. */
export function chatConnectCookieOf(request: FastifyRequest): string | null {
  const value = request.cookies[CHAT_CONNECT_COOKIE];
  return typeof value === 'string' && value !== '' ? value : null;
}

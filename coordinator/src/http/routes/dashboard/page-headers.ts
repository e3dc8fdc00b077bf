import type { FastifyReply } from 'fastify';

/**
 * The dashboard's Content-Security-Policy: everything from this origin only, no inline script or
 * style, no plugins, and no page may frame it. Vite's build has no inline code (dashboard/vite.config.ts).
 */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

/** The security headers of every dashboard page and asset. */
export function setPageHeaders(reply: FastifyReply): void {
  void reply.headers({
    'content-security-policy': CONTENT_SECURITY_POLICY,
    'x-frame-options': 'DENY',
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'same-origin',
    'cross-origin-opener-policy': 'same-origin',
  });
}

import type { FastifyReply } from 'fastify';
import type { Config } from '../../../config/config.js';
import { bucketOrigin } from '../../../config/storage-config.js';

/**
 * The dashboard's Content-Security-Policy: everything from this origin only, no inline script or
 * style, no plugins, and no page may frame it. Vite's build has no inline code (dashboard/vite.config.ts).
 * `connectOrigins`: where else the page may send requests: the bucket of DROVER_STORAGE_URL,
 * which the dashboard's uploads go to straight.
 */
export function contentSecurityPolicy(connectOrigins: readonly string[] = []): string {
  return [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "font-src 'self'",
    ["connect-src 'self'", ...connectOrigins].join(' '),
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; ');
}

/** The policy of a coordinator's configuration, made once per configuration. */
const policies = new WeakMap<Config, string>();
function policyOf(config: Config): string {
  let policy = policies.get(config);
  if (policy === undefined) {
    policy = contentSecurityPolicy(config.storage.kind === 's3' ? [bucketOrigin(config.storage)] : []);
    policies.set(config, policy);
  }
  return policy;
}

/** The security headers of every dashboard page and asset. */
export function setPageHeaders(reply: FastifyReply): void {
  void reply.headers({
    'content-security-policy': policyOf(reply.server.ctx.config),
    'x-frame-options': 'DENY',
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'same-origin',
    'cross-origin-opener-policy': 'same-origin',
  });
}

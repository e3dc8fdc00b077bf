import type { FastifyRequest } from 'fastify';
import { forbidden } from '../../errors.js';

/** The header the dashboard sends with every call: a cross-site form or link cannot send it. */
export const CSRF_HEADER = 'x-drover-csrf';

const READS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** The request's own origin, as the browser sees it: the Host it reached, or DROVER_PUBLIC_URL. */
function isOwnOrigin(request: FastifyRequest, origin: string): boolean {
  if (origin === `${request.protocol}://${request.host}`) return true;
  return origin === new URL(request.server.ctx.config.publicUrl).origin;
}

/**
 * Protection against cross-site request forgery for a change (any method but GET, HEAD,
 * OPTIONS) authenticated by the session cookie: the browser must say the request comes from the
 * dashboard's own origin (`Origin`, or `Sec-Fetch-Site: same-origin` where it sends no Origin),
 * and the request must carry `X-Drover-CSRF: 1`. Requests with a bearer token are not concerned:
 * a browser never adds one by itself.
 */
export function refuseCrossSiteChange(request: FastifyRequest): void {
  if (READS.has(request.method)) return;
  const origin = request.headers.origin;
  if (origin !== undefined) {
    if (!isOwnOrigin(request, origin)) {
      throw forbidden(
        "Cross-site request refused: a change made with the session cookie must come from the dashboard's own origin",
      );
    }
  } else if (request.headers['sec-fetch-site'] !== 'same-origin') {
    throw forbidden(
      'Cross-site request refused: a change made with the session cookie needs a same-origin Origin header',
    );
  }
  if (request.headers[CSRF_HEADER] !== '1') {
    throw forbidden(
      `Cross-site request refused: a change made with the session cookie needs the header X-Drover-CSRF: 1`,
    );
  }
}

/**
 * Sign-in from another site's page is refused (it would sign the browser in to an account of
 * that site's choosing). API clients send neither header and are not concerned.
 */
export function refuseCrossSiteSignIn(request: FastifyRequest): void {
  const origin = request.headers.origin;
  const site = request.headers['sec-fetch-site'];
  const crossSite =
    origin !== undefined
      ? !isOwnOrigin(request, origin)
      : site !== undefined && site !== 'same-origin' && site !== 'none';
  if (crossSite) throw forbidden("Cross-site sign-in refused: sign in from the dashboard's own origin");
}

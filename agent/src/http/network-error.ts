import type { ProxyServer } from './proxy-env.js';

/**
 * A network failure in plain words (`connection refused (is the coordinator running...)`), from
 * the first error code found along its causes, else the innermost message.
 */
export function describeNetworkError(cause: unknown): string {
  const proxied = proxyFailureIn(cause);
  if (proxied) return proxied.message;
  let code: string | undefined;
  let message: string | undefined;
  let current = cause as { code?: unknown; message?: unknown; cause?: unknown } | undefined;
  for (let depth = 0; current && typeof current === 'object' && depth < 5; depth += 1) {
    if (code === undefined && typeof current.code === 'string') code = current.code;
    if (typeof current.message === 'string' && current.message !== '') message = current.message;
    current = current.cause as typeof current;
  }
  // EPROTO is any TLS protocol failure; OpenSSL's "wrong version number" is an answer in plain
  // HTTP to our TLS hello (older Node reports it as EPROTO with that message).
  if (code === 'EPROTO' && message?.includes('wrong version number')) code = 'ERR_SSL_WRONG_VERSION_NUMBER';
  return (code && NETWORK_ERRORS[code]) ?? message ?? String(cause);
}

/** What to do about a certificate the agent cannot verify: trust the CA that signed it. */
const TRUST_CA = 'trust its CA with --ca-file or NODE_EXTRA_CA_CERTS';

const NETWORK_ERRORS: Record<string, string> = {
  ECONNREFUSED: 'connection refused (is the coordinator running, and is the port right?)',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'host name lookup failed (temporary)',
  ECONNRESET: 'connection reset',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  ETIMEDOUT: 'timed out',
  EPIPE: 'the connection was closed',
  CONNECT_TIMEOUT: 'connection timed out',
  HEADERS_TIMEOUT: 'no answer in time',
  BODY_TIMEOUT: 'the answer did not arrive in time',
  CERT_HAS_EXPIRED: 'the server certificate has expired',
  DEPTH_ZERO_SELF_SIGNED_CERT: `the server certificate is self-signed; ${TRUST_CA}`,
  SELF_SIGNED_CERT_IN_CHAIN: `the server certificate is not trusted (self-signed chain); ${TRUST_CA}`,
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: `the server certificate could not be verified; ${TRUST_CA}`,
  UNABLE_TO_GET_ISSUER_CERT_LOCALLY: `the server certificate could not be verified; ${TRUST_CA}`,
  ERR_TLS_CERT_ALTNAME_INVALID: 'the server certificate does not name this host',
  ERR_SSL_WRONG_VERSION_NUMBER:
    'the server does not speak TLS on this port: use http:// or the https address of its reverse proxy',
};

/**
 * A request through a proxy that failed before the target answered, said as the proxy's failure:
 * it could not be reached, it refused the credentials (`statusCode` 407), or it could not reach
 * the target (its answer to the CONNECT, or its 407 to a forwarded `http://` request).
 */
export class ProxyFailure extends Error {
  override readonly name = 'ProxyFailure';

  constructor(
    readonly proxy: ProxyServer,
    readonly statusCode: number | null,
    options: { cause?: unknown } = {},
  ) {
    super(describeProxyFailure(proxy, statusCode, options.cause), options);
  }

  /** A proxied request's failure; an abort or a timeout once connected stays what it is. */
  static of(error: Error, proxy: ProxyServer): Error {
    const { code, statusCode } = error as Error & { code?: unknown; statusCode?: unknown };
    if (error.name === 'AbortError' || code === 'HEADERS_TIMEOUT' || code === 'BODY_TIMEOUT') return error;
    const status = code === 'ERR_PROXY_TUNNEL' && typeof statusCode === 'number' ? statusCode : null;
    return new ProxyFailure(proxy, status, { cause: error });
  }
}

function describeProxyFailure(proxy: ProxyServer, status: number | null, cause: unknown): string {
  const from = `from ${proxy.variable}`;
  if (status === 407) {
    return proxy.url.username
      ? `the proxy ${proxy.shown} refused the credentials (HTTP 407; check the user and password in ${proxy.variable})`
      : `the proxy ${proxy.shown} asks for credentials (HTTP 407; set ${proxy.variable} to http://user:password@host:port)`;
  }
  if (status !== null) return `the proxy ${proxy.shown} (${from}) could not open a tunnel to the host (HTTP ${status})`;
  const code = (cause as { code?: unknown } | undefined)?.code;
  if (code === 'ECONNREFUSED')
    return `connection refused by the proxy ${proxy.shown} (${from}; is it running, and is the port right?)`;
  if (code === 'ENOTFOUND') return `the proxy's host was not found: ${proxy.shown} (${from})`;
  return `${describeNetworkError(cause)} (through the proxy ${proxy.shown}, ${from})`;
}

/** The ProxyFailure along an error's causes, if any: the proxy, not the target, is then what failed. */
function proxyFailureIn(cause: unknown): ProxyFailure | null {
  let current = cause as { cause?: unknown } | undefined;
  for (let depth = 0; current && typeof current === 'object' && depth < 5; depth += 1) {
    if (current instanceof ProxyFailure) return current;
    current = current.cause as typeof current;
  }
  return null;
}

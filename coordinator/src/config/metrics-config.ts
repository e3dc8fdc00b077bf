import { isIP } from 'node:net';

/**
 * The Prometheus endpoint's settings (docs/metrics.md, "Turning it on"). `GET /metrics` on the
 * API's address is off unless a token is set, and then answers only that bearer token; a listen
 * address serves the same text without credentials on an address of its own (a private
 * interface, a sidecar). With neither, nothing is measured at all.
 */
export interface MetricsConfig {
  /** `DROVER_METRICS_TOKEN`: the bearer token `/metrics` on the API's address asks for; null: no such route. */
  readonly token: string | null;
  /** `--metrics-listen` / `DROVER_METRICS_LISTEN`: `/metrics` without credentials there; null: none. */
  readonly listen: { readonly host: string; readonly port: number } | null;
}

/** The shortest token accepted: a guessable one would hand the figures to anyone. */
export const MIN_METRICS_TOKEN_LENGTH = 16;
const MAX_METRICS_TOKEN_LENGTH = 1024;
/** What fits in `Authorization: Bearer <token>` as one credential (RFC 6750's b64token, and more). */
const TOKEN = /^[\x21-\x7e]+$/;
const HOST_NAME = /^[A-Za-z0-9.-]+$/;

/** Whether the coordinator measures at all: either setting turns it on. */
export const metricsEnabled = (m: MetricsConfig): boolean => m.token !== null || m.listen !== null;

export function parseMetricsConfig(
  env: Record<string, string | undefined>,
  listenRaw: { value: string; source: string } | undefined,
  api: { host: string; port: number },
  problems: string[],
): MetricsConfig {
  let token: string | null = null;
  const tokenRaw = env.DROVER_METRICS_TOKEN;
  if (tokenRaw !== undefined && tokenRaw !== '') {
    // The token itself is never echoed.
    if (!TOKEN.test(tokenRaw)) {
      problems.push('DROVER_METRICS_TOKEN: expected printable ASCII without spaces, got other characters');
    } else if (tokenRaw.length < MIN_METRICS_TOKEN_LENGTH || tokenRaw.length > MAX_METRICS_TOKEN_LENGTH) {
      problems.push(
        `DROVER_METRICS_TOKEN: expected ${MIN_METRICS_TOKEN_LENGTH} to ${MAX_METRICS_TOKEN_LENGTH} characters, got ${tokenRaw.length}`,
      );
    } else token = tokenRaw;
  }
  const listen = listenRaw ? parseListenAddress(listenRaw, api, problems) : null;
  return Object.freeze({ token, listen: listen && Object.freeze(listen) });
}

/** `host:port`, `[ipv6]:port`; the port 0 to 65535 (0: any free port), not the API's own address. */
function parseListenAddress(
  raw: { value: string; source: string },
  api: { host: string; port: number },
  problems: string[],
): { host: string; port: number } | null {
  const text = raw.value.trim();
  const expected = `${raw.source}: expected host:port (an IPv6 address in brackets: [::1]:9464)`;
  const match = /^(?:\[([^\]]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(text);
  const host = match ? (match[1] ?? match[2]!) : '';
  const port = match ? Number(match[3]) : Number.NaN;
  const hostOk = match?.[1] !== undefined ? isIP(host) === 6 : HOST_NAME.test(host);
  if (!match || !hostOk || port > 65535) {
    problems.push(`${expected}, got \`${raw.value}\``);
    return null;
  }
  if (port !== 0 && port === api.port && sameHost(host, api.host)) {
    problems.push(`${raw.source}: expected an address other than the API's (--host, --port), got \`${raw.value}\``);
    return null;
  }
  return { host, port };
}

/**
 * Whether two hosts of one port would clash: the same name or address, one of them every address
 * (`0.0.0.0`, `::`), or `localhost` beside a loopback address (it names them).
 */
function sameHost(a: string, b: string): boolean {
  const [x, y] = [a, b].map((h) => h.replace(/^\[|\]$/g, '').toLowerCase()) as [string, string];
  if (x === y || WILDCARD.has(x) || WILDCARD.has(y)) return true;
  const loopback = (h: string) => h.startsWith('127.') || h === '::1';
  return (x === 'localhost' && loopback(y)) || (y === 'localhost' && loopback(x));
}
const WILDCARD: ReadonlySet<string> = new Set(['0.0.0.0', '::']);

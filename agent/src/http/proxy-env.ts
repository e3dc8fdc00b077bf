import { BlockList, isIP } from 'node:net';
import { AgentError } from '../errors.js';

/**
 * The proxy settings of the environment (docs/agent.md, "Proxies and private CAs"): a proxy for
 * `https://` URLs (`https_proxy`, else `HTTPS_PROXY`), one for `http://` URLs (`http_proxy`, else
 * `HTTP_PROXY`), and the hosts reached directly (`no_proxy`, else `NO_PROXY`). The lower-case form
 * wins when both are set; an empty value counts as unset. Nothing here opens a connection: the
 * status command reads it too.
 */
export interface ProxySettings {
  https: ProxyServer | null;
  http: ProxyServer | null;
  /** The NO_PROXY entries, trimmed and lower-cased, with the variable that gave them. */
  noProxy: { variable: string; entries: string[] } | null;
}

export interface ProxyServer {
  /** With its credentials, if any (`http://user:pass@proxy:3128`). */
  url: URL;
  /** The URL with the password masked, for logs and the status. */
  shown: string;
  /** The variable it came from (`https_proxy`, `HTTPS_PROXY`, ...). */
  variable: string;
}

/** How a URL is reached: through a proxy, or directly (and why). */
export type ProxyRoute =
  | { proxy: ProxyServer }
  | { proxy: null; /** The NO_PROXY entry that named the host, if that is why. */ bypassedBy: string | null };

const variable = (env: NodeJS.ProcessEnv, lower: string): { name: string; value: string } | null => {
  for (const name of [lower, lower.toUpperCase()]) {
    const value = env[name]?.trim();
    if (value) return { name, value };
  }
  return null;
};

/** Reads the proxy variables; a proxy URL the agent cannot use is a `bad_config` AgentError naming its variable. */
export function readProxySettings(env: NodeJS.ProcessEnv = process.env): ProxySettings {
  const noProxy = variable(env, 'no_proxy');
  return {
    https: proxyServer(variable(env, 'https_proxy')),
    http: proxyServer(variable(env, 'http_proxy')),
    noProxy: noProxy && {
      variable: noProxy.name,
      entries: noProxy.value
        .split(/[\s,]+/)
        .map((entry) => entry.toLowerCase())
        .filter((entry) => entry !== ''),
    },
  };
}

/** The setting's value is shown in its errors with maskProxyText (not parsed: a `@` past the host part may be the password's). */
function proxyServer(found: { name: string; value: string } | null): ProxyServer | null {
  if (!found) return null;
  const { name, value } = found;
  // `proxy.example.com:3128` without a scheme is an HTTP proxy, as curl takes it.
  const text = /^[a-z][a-z0-9+.-]*:\/\//i.test(value) ? value : `http://${value}`;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new AgentError(
      'bad_config',
      `${name} is not a URL: expected http://[user:password@]host:port, got \`${maskProxyText(value)}\``,
    );
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new AgentError(
      'bad_config',
      `${name} must be an http:// or https:// proxy (the agent speaks HTTP CONNECT to it), got \`${maskProxyText(value)}\``,
    );
  }
  if ((url.pathname !== '/' && url.pathname !== '') || url.search || url.hash) {
    throw new AgentError(
      'bad_config',
      `${name} must be a proxy's address without a path, got \`${maskProxyText(value)}\``,
    );
  }
  return { url, shown: maskProxyUrl(url), variable: name };
}

/** Every variable a step may find a proxy's credentials in (steps inherit the agent's environment). */
const PROXY_VARIABLES = ['https_proxy', 'HTTPS_PROXY', 'http_proxy', 'HTTP_PROXY', 'all_proxy', 'ALL_PROXY'];

/**
 * The passwords in the environment's proxy variables, as written and decoded, whether or not the
 * agent uses that variable (the lower-case one wins, the other is still inherited by steps): the
 * agent masks them wherever it masks secrets, since a step may print its environment (`env`).
 */
export function proxyPasswords(env: NodeJS.ProcessEnv = process.env): string[] {
  const passwords = new Set<string>();
  for (const name of PROXY_VARIABLES) {
    const password = passwordIn(env[name]?.trim() ?? '');
    if (!password) continue;
    passwords.add(password);
    try {
      passwords.add(decodeURIComponent(password));
    } catch {
      // Not percent-encoded text: the written form is the one a step would print.
    }
  }
  return [...passwords];
}

/** The password of a proxy setting, as written (maskProxyText's part), or ''. */
function passwordIn(value: string): string {
  const span = passwordSpan(value);
  return span ? value.slice(span.from, span.to) : '';
}

/**
 * Where the password of a proxy setting is, not parsed as a URL: whatever lies between the
 * scheme's `://` (or the start) and the last `@` is credentials, and what follows their first `:`
 * the password. Conservative: a password holding `@` or `/` is taken whole.
 */
function passwordSpan(text: string): { from: number; to: number } | null {
  const start = /^[a-z][a-z0-9+.-]*:\/\//i.exec(text)?.[0].length ?? 0;
  const at = text.lastIndexOf('@');
  if (at < start) return null;
  const colon = text.indexOf(':', start);
  return colon < 0 || colon > at ? null : { from: colon + 1, to: at };
}

/** `http://user:***@proxy:3128`: the password never shown. */
export function maskProxyUrl(url: URL): string {
  const user = url.username ? `${url.username}${url.password ? ':***' : ''}@` : '';
  return `${url.protocol}//${user}${url.host}`;
}

/**
 * A proxy setting that is not a URL, as it may be shown: whatever lies between the scheme's `://`
 * (or the start) and the last `@` is credentials, and what follows their first `:` is masked
 * (`http://user:***@host:3128x`). Conservative: a password holding `@` or `/` is masked whole.
 */
export function maskProxyText(text: string): string {
  const span = passwordSpan(text);
  return span ? `${text.slice(0, span.from)}***${text.slice(span.to)}` : text;
}

/**
 * How `target` is reached under these settings: through the proxy of its scheme, unless NO_PROXY
 * names its host. Loopback addresses are proxied like any other unless NO_PROXY names them.
 */
export function proxyRouteFor(settings: ProxySettings, target: URL): ProxyRoute {
  const proxy = target.protocol === 'https:' ? settings.https : target.protocol === 'http:' ? settings.http : null;
  if (!proxy) return { proxy: null, bypassedBy: null };
  const entry = settings.noProxy?.entries.find((e) => noProxyMatches(e, target));
  return entry === undefined ? { proxy } : { proxy: null, bypassedBy: entry };
}

const unbracket = (host: string) => (host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host);
const defaultPort = (url: URL) => url.port || (url.protocol === 'https:' ? '443' : '80');

/**
 * Whether one NO_PROXY entry names the target, as curl reads them: `*` (every host), a host name
 * (itself and its subdomains; a leading `.` or `*.` means the same), an IP address, an IP range
 * in CIDR form (`10.0.0.0/8`), each optionally with `:port` (then only that port). No name is
 * resolved: `localhost` does not name `127.0.0.1`.
 */
export function noProxyMatches(entry: string, target: URL): boolean {
  if (entry === '*') return true;
  const host = unbracket(target.hostname.toLowerCase());
  let name = entry;
  let port: string | null = null;
  const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(entry);
  if (bracketed) {
    name = bracketed[1]!;
    port = bracketed[2] ?? null;
  } else if (isIP(entry) !== 6) {
    const colon = entry.lastIndexOf(':');
    if (colon > 0 && /^\d+$/.test(entry.slice(colon + 1))) {
      name = entry.slice(0, colon);
      port = entry.slice(colon + 1);
    }
  }
  if (port !== null && port !== defaultPort(target)) return false;
  if (name.includes('/')) return inCidr(host, name);
  if (isIP(name) !== 0 || isIP(host) !== 0) return name === host;
  const domain = name.replace(/^\*?\./, '');
  return domain !== '' && (host === domain || host.endsWith(`.${domain}`));
}

function inCidr(host: string, cidr: string): boolean {
  const [base, bits] = cidr.split('/') as [string, string];
  const family = isIP(base);
  const prefix = Number(bits);
  if (family === 0 || isIP(host) !== family || !/^\d+$/.test(bits) || prefix > (family === 4 ? 32 : 128)) return false;
  const range = new BlockList();
  const type = family === 4 ? 'ipv4' : 'ipv6';
  range.addSubnet(base, prefix, type);
  return range.check(host, type);
}

/** The route in words, for the status and the start line: the proxy (masked), or why none. */
export function describeProxyRoute(route: ProxyRoute, settings: ProxySettings): string {
  if (route.proxy) return `${route.proxy.shown} (from ${route.proxy.variable})`;
  if (route.bypassedBy !== null) return `no proxy (${settings.noProxy!.variable} matches \`${route.bypassedBy}\`)`;
  return 'direct';
}

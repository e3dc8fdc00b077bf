import fs from 'node:fs';
import http from 'node:http';
import { AgentError } from '../errors.js';
import {
  describeProxyRoute,
  proxyRouteFor,
  proxyPasswords,
  readProxySettings,
  type ProxyRoute,
  type ProxySettings,
} from './proxy-env.js';

/**
 * How long an idle keep-alive connection is kept for the next request, at most: less when the
 * server says sooner in its `Keep-Alive: timeout=N` (Node then closes it a second before).
 */
const IDLE_CONNECTION_MS = 60_000;

const https = () => process.getBuiltinModule('node:https');

/**
 * Where every request of the agent gets its connection: the coordinator's signed calls, the
 * stream, the downloads and uploads through presigned URLs, `enroll`. One place decides, per
 * URL, whether it goes through the proxy of the environment (proxy-env.ts) or directly, and which
 * certificates are trusted (Node's, and the `--ca-file`'s).
 */
let settings: ProxySettings | null = null;
/** The `--ca-file` trusted in addition to the default certificates, once loaded, and its certificates. */
let caFile: { file: string; certificates: string[] } | null = null;
/** The TLS settings of the `https:` pools when there is a `--ca-file`: the default trust and its certificates. */
let secureContext: import('node:tls').SecureContext | null = null;
const pools = new Map<string, http.Agent>();

export interface DispatcherOptions {
  /** The environment to read the proxy variables from (default `process.env`). */
  env?: NodeJS.ProcessEnv;
  /** `--ca-file`: PEM certificates trusted in addition to the default ones. */
  caFile?: string | undefined;
}

/**
 * Reads the proxy variables and the `--ca-file` before any request (the commands that talk to
 * the coordinator call it first): a proxy URL or a CA file the agent cannot use stops it with a
 * `bad_config` error naming the variable or the file. Without it, the first request reads
 * `process.env`.
 */
export function configureDispatcher(options: DispatcherOptions = {}): void {
  const read = readProxySettings(options.env ?? process.env);
  caFile = options.caFile === undefined ? null : { file: options.caFile, certificates: readCaFile(options.caFile) };
  secureContext = null;
  // The TLS connection to an https:// proxy is made by Node with the process's default trust
  // only: the file's certificates join it then (which costs ~2.5 MiB more than the pools' own).
  if (caFile && (read.https?.url.protocol === 'https:' || read.http?.url.protocol === 'https:')) {
    const tls = process.getBuiltinModule('node:tls');
    tls.setDefaultCACertificates([...tls.getCACertificates('default'), ...caFile.certificates]);
  }
  settings = read;
  for (const pool of pools.values()) pool.destroy();
  pools.clear();
}

function currentSettings(): ProxySettings {
  settings ??= readProxySettings(process.env);
  return settings;
}

/** The passwords of the environment's proxy variables (proxyPasswords): masked like secrets. */
export function proxyPasswordsInUse(): string[] {
  return proxyPasswords(process.env);
}

/** How a request to `url` goes: through which proxy, or directly and why. */
export function routeFor(url: URL): ProxyRoute {
  return proxyRouteFor(currentSettings(), url);
}

/** `http://user:***@proxy:3128 (from HTTPS_PROXY)`, `no proxy (NO_PROXY matches ...)` or `direct`. */
export function describeRouteFor(url: URL): string {
  return describeProxyRoute(routeFor(url), currentSettings());
}

/** The `--ca-file` in use, if any. */
export const trustedCaFile = (): string | null => caFile?.file ?? null;

/**
 * The connection pool for a request to `url` (kept-alive connections, made at the first request
 * of its scheme and proxy), or for `ownConnection`, an agent of its own that keeps none (a
 * long-lived stream). `node:https` is loaded only for an HTTPS URL: its TLS layer costs an agent
 * whose coordinator is plain HTTP ~3 MiB of memory. A proxied request to an `https://` URL goes
 * through a CONNECT tunnel, one to an `http://` URL is sent to the proxy with its absolute URL;
 * Node's own proxy support does both (with `Proxy-Authorization` from the proxy URL's
 * `user:password`), this module choosing the proxy.
 */
export function connectionFor(url: URL, ownConnection = false): { agent: http.Agent | false; route: ProxyRoute } {
  const route = routeFor(url);
  const protocol = url.protocol as 'http:' | 'https:';
  const proxy = route.proxy?.url.href;
  if (ownConnection) return { agent: proxy ? makeAgent(protocol, proxy, false) : false, route };
  const key = `${protocol} ${proxy ?? ''}`;
  let pool = pools.get(key);
  if (!pool) {
    pool = makeAgent(protocol, proxy, true);
    pools.set(key, pool);
  }
  return { agent: pool, route };
}

function makeAgent(protocol: 'http:' | 'https:', proxy: string | undefined, keepAlive: boolean): http.Agent {
  const options: http.AgentOptions = keepAlive ? { keepAlive, timeout: IDLE_CONNECTION_MS } : {};
  // No NO_PROXY here: routeFor already chose this proxy for the URL.
  if (proxy) options.proxyEnv = protocol === 'https:' ? { HTTPS_PROXY: proxy } : { HTTP_PROXY: proxy };
  if (protocol === 'http:') return new http.Agent(options);
  const context = caFileContext();
  return new (https().Agent)(context ? { ...options, secureContext: context } : options);
}

/**
 * The TLS settings trusting the `--ca-file` beside the default certificates, made once: adding
 * the file's certificates to one context shares Node's parsed root certificates, where replacing
 * the process's default set would parse them all again (~2.5 MiB more of an idle agent).
 */
function caFileContext(): import('node:tls').SecureContext | null {
  if (!caFile) return null;
  if (!secureContext) {
    secureContext = process.getBuiltinModule('node:tls').createSecureContext();
    for (const certificate of caFile.certificates) secureContext.context.addCACert(certificate);
  }
  return secureContext;
}

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

/**
 * The PEM certificates of a `--ca-file`, trusted in addition to the default ones (Node's bundled
 * roots, `NODE_EXTRA_CA_CERTS`) by every request to an `https://` URL (the coordinator, the
 * storage of presigned URLs) and by the connection to an `https://` proxy. A file that cannot be
 * read or holds no valid certificate is a `bad_config`.
 */
function readCaFile(file: string): string[] {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new AgentError('bad_config', `--ca-file: cannot read ${file} (${code ?? (error as Error).message})`);
  }
  const certificates = text.match(PEM_CERTIFICATE) ?? [];
  if (certificates.length === 0) {
    throw new AgentError(
      'bad_config',
      `--ca-file: ${file} holds no PEM certificate (expected -----BEGIN CERTIFICATE----- blocks)`,
    );
  }
  const { X509Certificate } = process.getBuiltinModule('node:crypto');
  for (const [index, pem] of certificates.entries()) {
    try {
      new X509Certificate(pem);
    } catch {
      throw new AgentError('bad_config', `--ca-file: certificate ${index + 1} of ${file} is not a valid certificate`);
    }
  }
  return certificates;
}

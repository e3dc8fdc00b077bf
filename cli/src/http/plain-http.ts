import { isIP } from 'node:net';
import type { Runtime } from '../runtime.js';

/** Whether the URL's host is this machine: a loopback address or `localhost`. */
function isLoopback(url: URL): boolean {
  const host = url.hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (host === 'localhost' || host.endsWith('.localhost')) return true;
  if (isIP(host) === 4) return host.startsWith('127.');
  return host === '::1';
}

let warned = false;

/**
 * Says once per command, on stderr, that `credential` goes unencrypted: the coordinator is named
 * by a plain `http://` URL of another machine. Not refused: a coordinator on a trusted network
 * may be reached so on purpose; the warning keeps it from going unnoticed.
 */
export function warnPlainHttp(rt: Pick<Runtime, 'err'>, origin: string, credential: string): void {
  if (warned) return;
  const url = new URL(origin);
  if (url.protocol !== 'http:' || isLoopback(url)) return;
  warned = true;
  rt.err(
    `drover: warning: ${url.origin} is plain HTTP: ${credential} crosses the network unencrypted; use https:// if the coordinator offers it\n`,
  );
}

/** For tests: the next call warns again. */
export function resetPlainHttpWarning(): void {
  warned = false;
}

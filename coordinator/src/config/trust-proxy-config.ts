import { isIP } from 'node:net';

/** proxy-addr's names for address ranges, as Fastify's `trustProxy` accepts them. */
const RANGE_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal']);
const MAX_ENTRIES = 64;

/**
 * `DROVER_TRUST_PROXY` (docs/scaling.md, "Load balancer"): the load balancers whose
 * `X-Forwarded-For` names the client. A comma-separated list of IP addresses, CIDR ranges
 * (`10.0.0.0/8`, `fd00::/8`) and the names `loopback`, `linklocal`, `uniquelocal`. Unset or empty:
 * no proxy is trusted, `X-Forwarded-For` is ignored and the client is the connection's peer, so a
 * client cannot pose as another address by sending the header itself.
 */
export function parseTrustProxy(raw: { value: string; source: string } | undefined, problems: string[]): string[] {
  if (!raw) return [];
  const entries = raw.value
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
  if (entries.length > MAX_ENTRIES) {
    problems.push(`${raw.source}: expected at most ${MAX_ENTRIES} addresses or ranges, got ${entries.length}`);
    return [];
  }
  const bad = entries.filter((entry) => !isTrustEntry(entry));
  if (bad.length > 0) {
    problems.push(
      `${raw.source}: expected IP addresses, CIDR ranges (10.0.0.0/8) or loopback, linklocal, uniquelocal, separated by commas; got ${bad.map((b) => `\`${b}\``).join(', ')}`,
    );
    return [];
  }
  return entries;
}

function isTrustEntry(entry: string): boolean {
  if (RANGE_NAMES.has(entry)) return true;
  const slash = entry.indexOf('/');
  if (slash === -1) return isIP(entry) !== 0;
  const version = isIP(entry.slice(0, slash));
  const prefix = entry.slice(slash + 1);
  if (version === 0 || !/^\d{1,3}$/.test(prefix)) return false;
  return Number(prefix) <= (version === 4 ? 32 : 128);
}

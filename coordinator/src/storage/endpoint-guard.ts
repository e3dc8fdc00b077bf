import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import type { AllowedHosts } from '../domain/model/storage-bindings.js';

export type { AllowedHosts };

/**
 * Addresses that are not the public internet: this host, private networks, link-local (cloud
 * metadata services), shared address space, benchmarking, multicast and reserved ranges.
 */
const LOCAL = new net.BlockList();
for (const [address, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  LOCAL.addSubnet(address, prefix, 'ipv4');
}
for (const [address, prefix] of [
  ['::1', 128],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
  ['64:ff9b:1::', 48],
] as const) {
  LOCAL.addSubnet(address, prefix, 'ipv6');
}

/** An IPv6 address's eight 16-bit groups (a trailing dotted IPv4 part read as two), or null. */
function hextets(address: string): number[] | null {
  let text = address.replace(/%.*$/, '').toLowerCase();
  if (!net.isIPv6(text)) return null;
  const quad = /(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(text);
  if (quad) {
    const [a, b, c, d] = quad.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, quad.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const left = head === '' ? [] : head.split(':');
  const right = tail === undefined || tail === '' ? [] : tail.split(':');
  const groups =
    tail === undefined ? left : [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right];
  return groups.map((g) => parseInt(g, 16));
}

/**
 * The IPv4 address an IPv6 address carries and reaches: IPv4-compatible (`::a.b.c.d`), mapped
 * (`::ffff:a.b.c.d`), translated (`::ffff:0:a.b.c.d`), NAT64 (`64:ff9b::a.b.c.d`, which a DNS64
 * network routes to that IPv4 address) and 6to4 (`2002:aabb:ccdd::`); else null.
 */
function embeddedIpv4(address: string): string | null {
  const h = hextets(address);
  if (!h) return null;
  const v4 = (high: number, low: number) => `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`;
  const zeros = (from: number, to: number) => h.slice(from, to).every((g) => g === 0);
  if (zeros(0, 5) && (h[5] === 0 || h[5] === 0xffff)) return v4(h[6]!, h[7]!);
  if (zeros(0, 4) && h[4] === 0xffff && h[5] === 0) return v4(h[6]!, h[7]!);
  if (h[0] === 0x64 && h[1] === 0xff9b && zeros(2, 6)) return v4(h[6]!, h[7]!);
  if (h[0] === 0x2002) return v4(h[1]!, h[2]!);
  return null;
}

/** Whether an IP address is of this host or a non-public network (false for anything that is no IP address). */
export function isLocalNetworkAddress(address: string): boolean {
  const bare = address.replace(/^\[|\]$/g, '');
  if (net.isIPv4(bare)) return LOCAL.check(bare, 'ipv4');
  const v4 = embeddedIpv4(bare);
  if (v4 !== null) return LOCAL.check(v4, 'ipv4');
  return net.isIPv6(bare.replace(/%.*$/, '')) ? LOCAL.check(bare.replace(/%.*$/, ''), 'ipv6') : false;
}

/** A connection the guard refused: the endpoint is in the coordinator's own networks and not allowed. */
export class EndpointRefusedError extends Error {
  readonly code = 'ENDPOINT_REFUSED';
}

const refusal = (host: string, address: string) =>
  new EndpointRefusedError(
    `${host} is ${address === host ? 'an address' : `${address}, an address`} of the coordinator's own networks, which ` +
      'storage bindings may reach only when the operator lists the host in DROVER_STORAGE_ALLOWED_HOSTS',
  );

/**
 * Keeps organizations' `s3` bindings from making the coordinator call into its own networks (a
 * metadata service, an admin port on the loopback): their endpoint must resolve to public
 * addresses only, unless the operator allowed the host. Checked when a binding is created (a
 * clear 422) and on every connection the binding's client opens (its own DNS lookup), so that a
 * name that resolves elsewhere later is refused too.
 */
export class EndpointGuard {
  constructor(private readonly allowed: AllowedHosts) {}

  /** Whether the endpoint's host may be of the local network: the operator listed it. */
  private allows(url: URL): boolean {
    if (this.allowed === 'any') return true;
    const host = url.hostname.toLowerCase();
    const port = url.port || (url.protocol === 'https:' ? '443' : '80');
    return this.allowed.has(host) || this.allowed.has(`${host}:${port}`);
  }

  /**
   * Why the endpoint may not be used, as resolved now, or null. A name that does not resolve
   * (yet) is let through: connections check again.
   */
  async problem(endpoint: string): Promise<string | null> {
    const url = new URL(endpoint);
    if (this.allows(url)) return null;
    const host = url.hostname.replace(/^\[|\]$/g, '');
    if (net.isIP(host) !== 0) {
      return isLocalNetworkAddress(host) ? refusal(host, host).message : null;
    }
    let addresses: dns.LookupAddress[];
    try {
      addresses = await dns.promises.lookup(host, { all: true });
    } catch {
      return null;
    }
    const local = addresses.find((a) => isLocalNetworkAddress(a.address));
    return local ? refusal(host, local.address).message : null;
  }

  /**
   * The HTTP agents a binding's client connects through: an IP address in the endpoint is checked
   * here, a name at each connection's lookup (every address it resolves to must be public).
   */
  agentsFor(endpoint: string): { httpAgent: http.Agent; httpsAgent: https.Agent } {
    const url = new URL(endpoint);
    const allowed = this.allows(url);
    const host = url.hostname.replace(/^\[|\]$/g, '');
    const literalRefused = !allowed && isLocalNetworkAddress(host);
    const lookup: net.LookupFunction = (hostname, options, callback) => {
      dns.lookup(hostname, { ...options, all: true }, (error, addresses) => {
        if (error) return callback(error, '', 4);
        const local = allowed ? undefined : addresses.find((a) => isLocalNetworkAddress(a.address));
        if (local) return callback(refusal(hostname, local.address), '', 4);
        if (options.all) return (callback as unknown as (e: null, a: dns.LookupAddress[]) => void)(null, addresses);
        const first = addresses[0]!;
        return callback(null, first.address, first.family);
      });
    };
    const options = { keepAlive: true, lookup };
    const httpAgent = new http.Agent(options);
    const httpsAgent = new https.Agent(options);
    if (literalRefused) {
      // No lookup happens for an IP address: refuse it before connecting.
      const refused = refusal(host, host);
      for (const agent of [httpAgent, httpsAgent]) {
        (agent as { createConnection: unknown }).createConnection = (_: unknown, done: (e: Error) => void) => {
          process.nextTick(() => done(refused));
          return undefined;
        };
      }
    }
    return { httpAgent, httpsAgent };
  }
}

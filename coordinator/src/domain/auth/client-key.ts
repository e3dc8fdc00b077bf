import ipaddr from 'ipaddr.js';

/**
 * The key under which a client address is counted by the limits on unauthenticated calls
 * (sign-in and enrollment lockouts, single sign-on starts, pending device sign-ins): an IPv4
 * address whole, an IPv6 one by its /64, which a single host is commonly given whole (counted
 * by the full address, one host could draw a fresh address for every guess). An IPv4 address
 * mapped into IPv6 (`::ffff:203.0.113.7`, a dual-stack socket's view) is its IPv4 address, so
 * that one client has one key whichever socket it came in on.
 */
export function clientKey(address: string): string {
  const bare = address.split('%')[0]!; // a link-local address's zone names our interface, not the client
  if (!ipaddr.IPv6.isValid(bare)) return bare.toLowerCase();
  const ip = ipaddr.IPv6.parse(bare);
  if (ip.isIPv4MappedAddress()) return ip.toIPv4Address().toString();
  return `${ipaddr.IPv6.networkAddressFromCIDR(`${bare}/64`).toString()}/64`;
}

import { describe, expect, it } from 'vitest';
import { EndpointGuard, isLocalNetworkAddress } from '../../src/storage/endpoint-guard.js';

describe('isLocalNetworkAddress', () => {
  it("tells the coordinator's own networks from public addresses, IPv4-mapped forms included", () => {
    for (const local of [
      '127.0.0.1',
      '127.8.9.10',
      '10.0.0.1',
      '172.16.0.1',
      '172.31.255.255',
      '192.168.0.1',
      '169.254.169.254',
      '100.64.0.1',
      '0.0.0.0',
      '224.0.0.1',
      '::1',
      '::',
      'fd00::1',
      'fe80::1',
      '::ffff:127.0.0.1',
      '::ffff:7f00:1',
      '[::ffff:a9fe:a9fe]',
      // IPv6 forms that carry an IPv4 address a network may route to it.
      '::127.0.0.1',
      '::7f00:1',
      '0:0:0:0:0:ffff:7f00:1',
      '::ffff:0:7f00:1',
      '64:ff9b::7f00:1',
      '64:ff9b::10.0.0.5',
      '64:ff9b:1::a9fe:a9fe',
      '2002:7f00:1::',
      '2002:c0a8:101::1',
      'fec0::1',
      'fe80::1%eth0',
    ]) {
      expect(isLocalNetworkAddress(local), local).toBe(true);
    }
    for (const public_ of [
      '8.8.8.8',
      '172.32.0.1',
      '52.95.110.1',
      '2606:4700::1111',
      '::ffff:808:808',
      '64:ff9b::808:808',
      '2002:808:808::1',
      'example.com',
    ]) {
      expect(isLocalNetworkAddress(public_), public_).toBe(false);
    }
  });
});

describe('EndpointGuard', () => {
  it('lets through what the operator listed (a host at any port, or one port), and public hosts', async () => {
    const guard = new EndpointGuard(new Set(['minio.lan', '127.0.0.1:9000', '[::1]']));
    expect(await guard.problem('http://127.0.0.1:9000')).toBeNull();
    expect(await guard.problem('http://[::1]:1234')).toBeNull();
    expect(await guard.problem('http://127.0.0.1:9001')).toMatch(/^127\.0\.0\.1 is an address of/);
    expect(await guard.problem('http://localhost:9000')).toMatch(/^localhost is (127\.0\.0\.1|::1), an address of/);
    expect(await guard.problem('https://8.8.8.8')).toBeNull();
    // A name that does not resolve (yet) passes here; each connection checks again.
    expect(await guard.problem('https://s3.does-not-resolve.invalid')).toBeNull();
    expect(await new EndpointGuard('any').problem('http://127.0.0.1:1')).toBeNull();
  });
});

import os from 'node:os';
import { describe, expect, it } from 'vitest';
import { KnownSecrets } from '../../src/workflows/known-secrets.js';
import {
  describeProxyRoute,
  noProxyMatches,
  proxyPasswords,
  proxyRouteFor,
  readProxySettings,
  type ProxySettings,
} from '../../src/http/proxy-env.js';

const route = (env: NodeJS.ProcessEnv, url: string): string => {
  const settings: ProxySettings = readProxySettings(env);
  return describeProxyRoute(proxyRouteFor(settings, new URL(url)), settings);
};

describe('the proxy variables', () => {
  it('pick the proxy of the URL scheme, the lower-case form winning when both are set', () => {
    const env = {
      HTTPS_PROXY: 'http://upper:3128',
      https_proxy: 'http://lower:3128',
      HTTP_PROXY: 'http://plain:8080',
    };
    expect(route(env, 'https://drover.example.com')).toBe('http://lower:3128 (from https_proxy)');
    expect(route(env, 'http://drover.example.com')).toBe('http://plain:8080 (from HTTP_PROXY)');
    expect(route({ HTTPS_PROXY: 'http://upper:3128', https_proxy: '' }, 'https://d.example')).toBe(
      'http://upper:3128 (from HTTPS_PROXY)',
    );
    // No fallback from one scheme to the other, as curl.
    expect(route({ HTTP_PROXY: 'http://plain:8080' }, 'https://drover.example.com')).toBe('direct');
    expect(route({}, 'https://drover.example.com')).toBe('direct');
  });

  it('give their passwords, as written and decoded, for the masker of everything the agent sends and logs', () => {
    const env = {
      HTTPS_PROXY: 'http://drover:s3cr%40t@proxy.lan:3128',
      HTTP_PROXY: 'http://drover:pr0xyS3cret@proxy.lan:3128',
      // Not the one the agent uses (the lower-case one wins), but a step inherits it all the same.
      https_proxy: 'http://other:an0ther@proxy.lan:3128',
      ALL_PROXY: 'socks5://s0cks@gw:1080',
    };
    expect(proxyPasswords(env).sort()).toEqual(['an0ther', 'pr0xyS3cret', 's3cr%40t', 's3cr@t']);
    const secrets = new KnownSecrets(os.tmpdir());
    secrets.remember(proxyPasswords(env));
    expect(secrets.masker('HTTPS_PROXY=http://drover:s3cr%40t@proxy.lan:3128 s3cr@t')).toBe(
      'HTTPS_PROXY=http://drover:***@proxy.lan:3128 ***',
    );
    expect(proxyPasswords({ HTTPS_PROXY: 'http://proxy.lan:3128', ALL_PROXY: 'socks5://s0cks@gw:1080' })).toEqual([]);
  });

  it('mask the password, and take a proxy without a scheme as http://', () => {
    expect(route({ HTTPS_PROXY: 'http://drover:s3cr%40t@proxy.lan:3128' }, 'https://d.example')).toBe(
      'http://drover:***@proxy.lan:3128 (from HTTPS_PROXY)',
    );
    expect(route({ HTTPS_PROXY: 'proxy.lan:3128' }, 'https://d.example')).toBe(
      'http://proxy.lan:3128 (from HTTPS_PROXY)',
    );
    const settings = readProxySettings({ https_proxy: 'http://drover:s3cr%40t@proxy.lan:3128' });
    expect(settings.https!.url.password).toBe('s3cr%40t');
  });

  it('refuse a proxy the agent cannot use, naming the variable and masking the password', () => {
    expect(() => readProxySettings({ HTTPS_PROXY: 'socks5://u:secret@proxy:1080' })).toThrow(
      'HTTPS_PROXY must be an http:// or https:// proxy (the agent speaks HTTP CONNECT to it), got `socks5://u:***@proxy:1080`',
    );
    expect(() => readProxySettings({ http_proxy: 'http://proxy:3128/some/path' })).toThrow(
      /^http_proxy must be a proxy's address without a path/,
    );
    expect(() => readProxySettings({ HTTP_PROXY: 'http://[oops' })).toThrow(/^HTTP_PROXY is not a URL/);
  });

  it('never show the password of a proxy setting that is not a URL', () => {
    const message = (value: string) => {
      try {
        readProxySettings({ HTTPS_PROXY: value });
      } catch (error) {
        return (error as Error).message;
      }
      return 'accepted';
    };
    expect(message('http://drover:S3cr3tPass@proxy.lan:3128x')).toBe(
      'HTTPS_PROXY is not a URL: expected http://[user:password@]host:port, got `http://drover:***@proxy.lan:3128x`',
    );
    // Without a scheme; a password holding `@`, `/` or `:`: masked whole, up to the last `@`.
    expect(message('drover:S3cr3tPass@proxy.lan:3128x')).toMatch(/got `drover:\*\*\*@proxy\.lan:3128x`$/);
    expect(message('http://drover:p@ss/w:rd@proxy.lan:31x')).toMatch(/got `http:\/\/drover:\*\*\*@proxy\.lan:31x`$/);
    // Without a password, or without credentials: shown as it is.
    expect(message('http://drover@proxy.lan:3128x')).toMatch(/got `http:\/\/drover@proxy\.lan:3128x`$/);
    expect(message('http://proxy.lan:3128x')).toMatch(/got `http:\/\/proxy\.lan:3128x`$/);
    for (const value of [
      'http://drover:S3cr3tPass@proxy.lan:3128x',
      'drover:S3cr3tPass@[::1',
      'x://u:S3cr3tPass@h:p/q',
    ]) {
      expect(message(value)).not.toContain('S3cr3tPass');
    }
  });

  it('proxy loopback addresses unless NO_PROXY names them', () => {
    const proxy = { HTTP_PROXY: 'http://proxy:3128' };
    expect(route(proxy, 'http://127.0.0.1:4000')).toBe('http://proxy:3128 (from HTTP_PROXY)');
    expect(route({ ...proxy, NO_PROXY: 'localhost' }, 'http://127.0.0.1:4000')).toBe(
      'http://proxy:3128 (from HTTP_PROXY)',
    );
    expect(route({ ...proxy, NO_PROXY: 'localhost, 127.0.0.1' }, 'http://127.0.0.1:4000')).toBe(
      'no proxy (NO_PROXY matches `127.0.0.1`)',
    );
    expect(route({ ...proxy, NO_PROXY: 'other', no_proxy: '127.0.0.1' }, 'http://127.0.0.1:4000')).toBe(
      'no proxy (no_proxy matches `127.0.0.1`)',
    );
  });
});

describe('a NO_PROXY entry', () => {
  const matches = (entry: string, url: string) => noProxyMatches(entry, new URL(url));

  it('names a host and its subdomains, with or without a leading dot or *.', () => {
    for (const entry of ['example.com', '.example.com', '*.example.com']) {
      expect(matches(entry, 'https://example.com'), entry).toBe(true);
      expect(matches(entry, 'https://drover.example.com'), entry).toBe(true);
      expect(matches(entry, 'https://notexample.com'), entry).toBe(false);
    }
    expect(matches('*', 'https://anything.example')).toBe(true);
  });

  it('with a port names only that port (the scheme default when the URL has none)', () => {
    expect(matches('drover.lan:8443', 'https://drover.lan:8443')).toBe(true);
    expect(matches('drover.lan:8443', 'https://drover.lan')).toBe(false);
    expect(matches('drover.lan:443', 'https://drover.lan')).toBe(true);
    expect(matches('127.0.0.1:4000', 'http://127.0.0.1:4000')).toBe(true);
  });

  it('names IP addresses exactly or by CIDR range, IPv6 included, and resolves no name', () => {
    expect(matches('10.0.0.0/8', 'http://10.1.2.3')).toBe(true);
    expect(matches('10.0.0.0/8', 'http://11.1.2.3')).toBe(false);
    expect(matches('::1', 'http://[::1]:4000')).toBe(true);
    expect(matches('[::1]:4000', 'http://[::1]:4000')).toBe(true);
    expect(matches('fd00::/8', 'http://[fd12::1]')).toBe(true);
    expect(matches('localhost', 'http://127.0.0.1')).toBe(false);
    expect(matches('0.0.1', 'http://127.0.0.1')).toBe(false);
  });
});

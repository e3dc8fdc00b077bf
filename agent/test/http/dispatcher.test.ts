import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configureDispatcher } from '../../src/http/dispatcher.js';
import { describeNetworkError } from '../../src/http/network-error.js';
import { readText, sendRequest } from '../../src/http/request.js';
import { startForwardProxy, type ForwardProxy } from '../../../test/helpers/forward-proxy.js';
import { hasOpenssl, startTlsProxy, type TlsProxy } from '../../../test/helpers/tls-proxy.js';

/**
 * Every request of the agent (sendRequest) through the proxy the environment names: a real
 * forward proxy with Basic auth, an HTTP server, and an HTTPS front of it signed by a private CA.
 */

let server: http.Server;
let target: string;
let proxy: ForwardProxy;
let front: TlsProxy | undefined;
let tlsProxy: TlsProxy | undefined;

beforeAll(async () => {
  server = http.createServer((req, res) => res.end(`hello ${req.url}`));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  target = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  proxy = await startForwardProxy({ auth: { user: 'drover', password: 'pa:ss@word' } });
  if (hasOpenssl()) {
    front = await startTlsProxy(target);
    // The forward proxy spoken to in TLS: an https:// proxy.
    tlsProxy = await startTlsProxy(proxy.url);
  }
});
afterAll(async () => {
  configureDispatcher({ env: {} });
  await tlsProxy?.close();
  await front?.close();
  await proxy.close();
  await new Promise((resolve) => server.close(resolve));
});

/** The answer's body, or the agent's description of the failure. */
async function get(url: string): Promise<string> {
  try {
    const res = await sendRequest(url, { method: 'GET', idleTimeoutMs: 10_000 });
    return `${res.statusCode} ${await readText(res.body)}`;
  } catch (error) {
    return `failed: ${describeNetworkError(error)}`;
  }
}

const proxyPort = () => new URL(proxy.url).port;

describe('requests through the proxy of the environment', () => {
  it('forwards an http:// URL to the proxy with its absolute URL and the credentials of the proxy URL', async () => {
    configureDispatcher({
      env: { http_proxy: proxy.urlWith('drover', 'pa:ss@word'), HTTP_PROXY: 'http://127.0.0.1:9' },
    });
    const mark = proxy.forwarded.length;
    expect(await get(`${target}/one`)).toBe('200 hello /one');
    expect(await get(`${target}/two`)).toBe('200 hello /two');
    expect(proxy.forwarded.slice(mark)).toEqual([
      { method: 'GET', target: `${target}/one` },
      { method: 'GET', target: `${target}/two` },
    ]);
  });

  it('says which proxy refused the credentials, for a forwarded request and for a CONNECT', async () => {
    const wrong = proxy.urlWith('drover', 'nope');
    configureDispatcher({ env: { HTTP_PROXY: wrong, HTTPS_PROXY: wrong } });
    const refused = (variable: string) =>
      `failed: the proxy http://drover:***@127.0.0.1:${proxyPort()} refused the credentials (HTTP 407; check the user and password in ${variable})`;
    expect(await get(`${target}/x`)).toBe(refused('HTTP_PROXY'));
    expect(await get('https://127.0.0.1:1/x')).toBe(refused('HTTPS_PROXY'));
    configureDispatcher({ env: { HTTPS_PROXY: proxy.url } });
    expect(await get('https://127.0.0.1:1/x')).toBe(
      `failed: the proxy http://127.0.0.1:${proxyPort()} asks for credentials (HTTP 407; set HTTPS_PROXY to http://user:password@host:port)`,
    );
  });

  it('says when the proxy is not there, or cannot reach the host', async () => {
    configureDispatcher({ env: { HTTP_PROXY: 'http://127.0.0.1:9' } });
    expect(await get(`${target}/x`)).toBe(
      'failed: connection refused by the proxy http://127.0.0.1:9 (from HTTP_PROXY; is it running, and is the port right?)',
    );
    configureDispatcher({ env: { HTTPS_PROXY: proxy.urlWith('drover', 'pa:ss@word') } });
    expect(await get('https://127.0.0.1:9/x')).toBe(
      `failed: the proxy http://drover:***@127.0.0.1:${proxyPort()} (from HTTPS_PROXY) could not open a tunnel to the host (HTTP 502)`,
    );
  });

  it('goes directly to a host NO_PROXY names', async () => {
    configureDispatcher({ env: { HTTP_PROXY: 'http://127.0.0.1:9', NO_PROXY: '127.0.0.1' } });
    expect(await get(`${target}/direct`)).toBe('200 hello /direct');
  });

  it.skipIf(!hasOpenssl())(
    'tunnels an https:// URL with CONNECT, one tunnel for kept-alive requests, trusting --ca-file',
    async () => {
      const env = { HTTPS_PROXY: proxy.urlWith('drover', 'pa:ss@word') };
      configureDispatcher({ env });
      expect(await get(`${front!.url}/a`)).toBe(
        `failed: the server certificate could not be verified; trust its CA with --ca-file or NODE_EXTRA_CA_CERTS (through the proxy http://drover:***@127.0.0.1:${proxyPort()}, from HTTPS_PROXY)`,
      );
      configureDispatcher({ env, caFile: front!.caFile });
      const mark = proxy.forwarded.length;
      expect(await get(`${front!.url}/a`)).toBe('200 hello /a');
      expect(await get(`${front!.url}/b`)).toBe('200 hello /b');
      expect(proxy.forwarded.slice(mark)).toEqual([{ method: 'CONNECT', target: new URL(front!.url).host }]);
    },
  );

  it.skipIf(!hasOpenssl())('speaks TLS to an https:// proxy whose CA --ca-file names', async () => {
    const url = tlsProxy!.url.replace('https://', 'https://drover:pa%3Ass%40word@');
    configureDispatcher({ env: { HTTP_PROXY: url }, caFile: tlsProxy!.caFile });
    const mark = proxy.forwarded.length;
    expect(await get(`${target}/tls`)).toBe('200 hello /tls');
    expect(proxy.forwarded.slice(mark)).toEqual([{ method: 'GET', target: `${target}/tls` }]);
  });
});

describe('an https:// URL to a port that answers in plain HTTP', () => {
  it('says that the server does not speak TLS there, not OpenSSL\'s "wrong version number"', async () => {
    configureDispatcher({ env: {} });
    expect(await get(`${target.replace('http:', 'https:')}/a`)).toBe(
      'failed: the server does not speak TLS on this port: use http:// or the https address of its reverse proxy',
    );
    // As older Node reports it.
    const eproto = Object.assign(
      new Error('write EPROTO 40E7:error:0A00010B:SSL routines:ssl3_get_record:wrong version number'),
      {
        code: 'EPROTO',
      },
    );
    expect(describeNetworkError(new TypeError('fetch failed', { cause: eproto }))).toMatch(
      /^the server does not speak TLS/,
    );
  });
});

describe('--ca-file', () => {
  it('is refused when it cannot be read or holds no certificate', () => {
    expect(() => configureDispatcher({ env: {}, caFile: '/nonexistent/ca.pem' })).toThrow(
      '--ca-file: cannot read /nonexistent/ca.pem (ENOENT)',
    );
    expect(() => configureDispatcher({ env: {}, caFile: __filename })).toThrow(
      /^--ca-file: .*dispatcher\.test\.ts holds no PEM certificate/,
    );
  });
});

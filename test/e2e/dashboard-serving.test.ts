import fs from 'node:fs';
import path from 'node:path';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enrollTestAgent } from '../helpers/agent.js';
import { startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import { DASHBOARD_INDEX } from '../helpers/dashboard-build.js';
import { createTestJob } from '../helpers/jobs.js';
import { rawRequest } from '../helpers/storage.js';

/** The coordinator serves the dashboard at / from its own origin, without shadowing the API. */

const BROWSER_ACCEPT = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';

function expectPageHeaders(headers: Headers): void {
  const csp = headers.get('content-security-policy') ?? '';
  expect(csp).toContain("default-src 'self'");
  expect(csp).toContain("script-src 'self'");
  expect(csp).toContain("frame-ancestors 'none'");
  expect(csp).not.toContain('unsafe-inline');
  expect(csp).not.toContain('unsafe-eval');
  expect(headers.get('x-frame-options')).toBe('DENY');
  expect(headers.get('x-content-type-options')).toBe('nosniff');
  expect(headers.get('referrer-policy')).toBe('same-origin');
}

describe('the dashboard served by the coordinator', () => {
  let t: TestCoordinator;
  let index: string;
  let jobId: string;
  beforeAll(async () => {
    t = await startTestCoordinator();
    index = fs.readFileSync(DASHBOARD_INDEX, 'utf8');
    const agent = await enrollTestAgent(t.owner, t.orgId);
    jobId = (await createTestJob(t, agent)).id;
  });
  afterAll(() => t?.close());

  it('answers / and its client routes with index.html, revalidated, with the security headers', async () => {
    for (const path of ['/', '/login', '/account', `/orgs/${t.orgId}`, `/orgs/${t.orgId}/agents`]) {
      const res = await fetch(`${t.url}${path}`, { headers: { accept: BROWSER_ACCEPT } });
      expect(res.status, path).toBe(200);
      expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
      expect(res.headers.get('cache-control')).toBe('no-cache');
      expectPageHeaders(res.headers);
      expect(await res.text()).toBe(index);
    }
  });

  it('has no inline script: every script is a file of its own origin', () => {
    const scripts = [...index.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)];
    expect(scripts.length).toBeGreaterThan(0);
    for (const [, attributes, body] of scripts) {
      expect(attributes).toMatch(/\bsrc="\/assets\/[^"]+\.js"/);
      expect(body!.trim()).toBe('');
    }
    expect(index).not.toMatch(/\son[a-z]+=/i); // no event handler attributes
    expect(index).not.toMatch(/https?:\/\//); // nothing from another origin (no CDN)
  });

  it('serves the hashed assets with a long, immutable cache, and an unknown asset is a JSON 404', async () => {
    const assets = [...index.matchAll(/(?:src|href)="(\/assets\/[^"]+)"/g)].map((m) => m[1]!);
    expect(assets.some((a) => a.endsWith('.js'))).toBe(true);
    const types: Record<string, RegExp> = { js: /javascript/, css: /^text\/css/, svg: /^image\/svg\+xml/ };
    for (const asset of assets) {
      const res = await fetch(`${t.url}${asset}`);
      expect(res.status, asset).toBe(200);
      expect(res.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
      expect(res.headers.get('content-type')).toMatch(types[asset.split('.').pop()!]!);
      expectPageHeaders(res.headers);
      await res.arrayBuffer();
    }
    const missing = await fetch(`${t.url}/assets/index-00000000.js`);
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({ statusCode: 404, code: 'not_found' });
    const traversal = await fetch(`${t.url}/assets/..%2f..%2fpackage.json`);
    expect(traversal.status).toBe(404);
  });

  it('sends each asset compressed as the browser accepts it (Brotli, gzip or none), the same bytes once decoded', async () => {
    const scripts = [...index.matchAll(/src="\/(assets\/[^"]+\.js)"/g)].map((m) => m[1]!);
    const styles = [...index.matchAll(/href="\/(assets\/[^"]+\.css)"/g)].map((m) => m[1]!);
    for (const asset of [...scripts, ...styles]) {
      const original = fs.readFileSync(path.join(path.dirname(DASHBOARD_INDEX), asset));
      const type = asset.endsWith('.js') ? /^text\/javascript|^application\/javascript/ : /^text\/css/;
      const get = (acceptEncoding?: string, method = 'GET', extra: Record<string, string> = {}) =>
        rawRequest(method, `${t.url}/${asset}`, {
          headers: { ...(acceptEncoding === undefined ? {} : { 'accept-encoding': acceptEncoding }), ...extra },
        });
      const cases: [string | undefined, string | undefined, (b: Buffer) => Buffer][] = [
        ['gzip, deflate, br, zstd', 'br', brotliDecompressSync], // Chromium's
        ['br', 'br', brotliDecompressSync],
        ['gzip', 'gzip', gunzipSync],
        ['br;q=0, gzip', 'gzip', gunzipSync],
        [undefined, undefined, (b) => b],
        ['identity', undefined, (b) => b],
      ];
      for (const [accept, encoding, decode] of cases) {
        const res = await get(accept);
        const what = `${asset} for Accept-Encoding ${accept}`;
        expect(res.status, what).toBe(200);
        expect(res.headers['content-encoding'], what).toBe(encoding);
        expect(res.headers['content-type'], what).toMatch(type);
        expect(res.headers.vary, what).toMatch(/accept-encoding/i);
        expect(res.headers['cache-control'], what).toBe('public, max-age=31536000, immutable');
        expect(Number(res.headers['content-length']), what).toBe(res.body.length);
        expect(decode(res.body).equals(original), what).toBe(true);
        if (encoding) expect(res.body.length, what).toBeLessThan(original.length / 2);
      }
      // HEAD: the headers of the GET, no body; a revalidation with the ETag: 304.
      const brotli = await get('br');
      const head = await get('br', 'HEAD');
      expect(head.status).toBe(200);
      expect(head.body.length).toBe(0);
      expect(head.headers['content-encoding']).toBe('br');
      expect(head.headers['content-length']).toBe(brotli.headers['content-length']);
      expect(brotli.headers.etag).toBeTruthy();
      const again = await get('br', 'GET', { 'if-none-match': brotli.headers.etag! });
      expect(again.status).toBe(304);
      expect(again.body.length).toBe(0);
    }
    // The compressed copies are no addresses of their own.
    for (const copy of [`${scripts[0]}.br`, `${scripts[0]}.gz`]) {
      expect((await rawRequest('GET', `${t.url}/${copy}`)).status, copy).toBe(404);
    }
  });

  it('has an icon: the one the page links to, and /favicon.ico for clients that ask for it on their own', async () => {
    const linked = /<link rel="icon" type="image\/svg\+xml" href="(\/assets\/favicon-[^"]+\.svg)"/.exec(index);
    expect(linked, 'index.html links its icon').not.toBeNull();
    const svg = await rawRequest('GET', `${t.url}${linked![1]}`);
    expect(svg.status).toBe(200);
    expect(svg.headers['content-type']).toMatch(/^image\/svg\+xml/);

    const ico = await rawRequest('GET', `${t.url}/favicon.ico`);
    expect(ico.status).toBe(200);
    expect(ico.headers['content-type']).toMatch(/^image\/(x-icon|vnd\.microsoft\.icon)/);
    expect(ico.headers['cache-control']).toBe('no-cache');
    expect(ico.body.subarray(0, 4).equals(Buffer.from([0, 0, 1, 0]))).toBe(true); // an ICO file
    expectPageHeaders(new Headers(ico.headers as Record<string, string>));
    const again = await rawRequest('GET', `${t.url}/favicon.ico`, { headers: { 'if-none-match': ico.headers.etag! } });
    expect(again.status).toBe(304);
    expect((await rawRequest('HEAD', `${t.url}/favicon.ico`)).status).toBe(200);
    // Only the build's own files: nothing else of its folder, nor the API, is reached this way.
    for (const path of ['/index.html', '/assets/', '/favicon.ico.gz', '/nothing.ico']) {
      expect((await rawRequest('GET', `${t.url}${path}`)).status, path).toBe(404);
    }
  });

  it('gives a browser opening a statusUrl (/api/jobs/:id) the dashboard, signed in or not', async () => {
    const res = await fetch(`${t.url}/api/jobs/${jobId}`, { headers: { accept: BROWSER_ACCEPT } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expectPageHeaders(res.headers);
    expect(await res.text()).toBe(index);
  });

  it('keeps the JSON answer of /api/jobs/:id for clients that do not ask for HTML', async () => {
    for (const accept of [undefined, '*/*', 'application/json', 'application/json, text/html;q=0.5']) {
      const headers: Record<string, string> = { authorization: `Bearer ${t.owner.token}` };
      if (accept) headers.accept = accept;
      const res = await fetch(`${t.url}/api/jobs/${jobId}`, { headers });
      expect(res.status, String(accept)).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      expect(((await res.json()) as { id: string }).id).toBe(jobId);
      const anonymous = await fetch(`${t.url}/api/jobs/${jobId}`, { headers: accept ? { accept } : {} });
      expect(anonymous.status).toBe(401);
    }
  });

  it('never shadows the API: unknown API paths keep their JSON 404, with or without Accept: text/html', async () => {
    for (const path of ['/v1/nothing-here', '/v1/orgs/x/nothing', '/api/nothing', '/docs/nothing']) {
      const res = await fetch(`${t.url}${path}`, { headers: { accept: BROWSER_ACCEPT } });
      expect(res.status, path).toBe(404);
      expect(await res.json()).toMatchObject({ statusCode: 404, code: 'not_found' });
    }
    const openapi = await fetch(`${t.url}/v1/openapi.json`, { headers: { accept: BROWSER_ACCEPT } });
    expect(openapi.headers.get('content-type')).toMatch(/^application\/json/);
    const api = await fetch(`${t.url}/v1/orgs`, { headers: { accept: BROWSER_ACCEPT } });
    expect(api.status).toBe(401);
    expect(api.headers.get('content-type')).toMatch(/^application\/json/);
  });

  it('answers a change sent to a page address 405, in the error shape', async () => {
    const res = await fetch(`${t.url}/`, { method: 'POST' });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('GET, HEAD');
    expect(await res.json()).toMatchObject({ code: 'method_not_allowed' });
  });
});

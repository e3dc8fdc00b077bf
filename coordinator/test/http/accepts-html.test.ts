import type { FastifyRequest } from 'fastify';
import { describe, expect, it } from 'vitest';
import { prefersHtml } from '../../src/http/routes/dashboard/accepts-html.js';

const request = (accept: string | undefined, method = 'GET') =>
  ({ method, headers: accept === undefined ? {} : { accept } }) as unknown as FastifyRequest;

describe('prefersHtml', () => {
  it('is true for what browsers send when they open an address', () => {
    expect(prefersHtml(request('text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8'))).toBe(true);
    expect(prefersHtml(request('text/html'))).toBe(true);
    expect(prefersHtml(request('text/html', 'HEAD'))).toBe(true);
  });

  it('is false for API clients: no Accept, */*, JSON, or JSON weighted above HTML', () => {
    for (const accept of [
      undefined,
      '',
      '*/*',
      'application/json',
      'application/json, text/html;q=0.5',
      'application/*',
    ]) {
      expect(prefersHtml(request(accept)), String(accept)).toBe(false);
    }
    expect(prefersHtml(request('text/html;q=0.5, */*'))).toBe(false);
    expect(prefersHtml(request('text/html;q=0'))).toBe(false);
  });

  it('is false for anything but a read', () => {
    expect(prefersHtml(request('text/html', 'POST'))).toBe(false);
  });

  it('ignores parameters other than q, and garbage', () => {
    expect(prefersHtml(request('text/html; charset=utf-8'))).toBe(true);
    expect(prefersHtml(request('text/html;q=abc'))).toBe(false);
    expect(prefersHtml(request(`text/html${',x/y'.repeat(1000)}`))).toBe(false); // too long to read
  });
});

import { createHmac, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { BlobUrlSigner } from '../../src/storage/blob-url.js';

const KEY = randomBytes(32);
const FILE = '3b2c9a44-1f0e-4d55-9a8e-0c2f6b1d7e90';
const NOW = 1_800_000_000;

const parse = (query: string) => Object.fromEntries(new URLSearchParams(query)) as Record<string, string>;

describe('BlobUrlSigner', () => {
  const signer = new BlobUrlSigner(KEY);

  it('signs method, file id, expiry and nonce with HMAC-SHA256 as docs/storage.md describes', () => {
    const q = parse(signer.query('PUT', FILE, NOW + 60));
    expect(q.n).toMatch(/^[A-Za-z0-9_-]{16}$/);
    const expected = createHmac('sha256', KEY)
      .update(`DROVER-BLOB-V1\nPUT\n${FILE}\n${NOW + 60}\n${q.n}`)
      .digest('base64url');
    expect(q).toEqual({ m: 'PUT', exp: String(NOW + 60), n: q.n, sig: expected });
  });

  it('makes a new URL every time, even within one second', () => {
    const urls = new Set(Array.from({ length: 20 }, () => signer.query('GET', FILE, NOW + 60)));
    expect(urls.size).toBe(20);
  });

  it('still accepts a URL issued before nonces, and refuses one whose nonce was removed or changed', () => {
    const legacySig = createHmac('sha256', KEY)
      .update(`DROVER-BLOB-V1\nGET\n${FILE}\n${NOW + 60}`)
      .digest('base64url');
    expect(signer.check('GET', FILE, { m: 'GET', exp: String(NOW + 60), sig: legacySig }, NOW)).toEqual({ ok: true });
    const q = parse(signer.query('GET', FILE, NOW + 60));
    expect(signer.check('GET', FILE, { ...q, n: undefined }, NOW)).toEqual({ ok: false, reason: 'bad_signature' });
    const other = `${q.n![0] === 'A' ? 'B' : 'A'}${q.n!.slice(1)}`;
    expect(signer.check('GET', FILE, { ...q, n: other }, NOW)).toEqual({ ok: false, reason: 'bad_signature' });
  });

  it('accepts its own URL for the signed method until it expires', () => {
    const q = parse(signer.query('GET', FILE, NOW + 60));
    expect(signer.check('GET', FILE, q, NOW)).toEqual({ ok: true });
    expect(signer.check('GET', FILE, q, NOW + 59)).toEqual({ ok: true });
    expect(signer.check('GET', FILE, q, NOW + 60)).toEqual({ ok: false, reason: 'expired' });
  });

  it('tells a URL used with the other method apart from a tampered one', () => {
    const q = parse(signer.query('GET', FILE, NOW + 60));
    expect(signer.check('PUT', FILE, q, NOW)).toEqual({ ok: false, reason: 'wrong_method' });
    expect(signer.check('PUT', FILE, { ...q, m: 'PUT' }, NOW)).toEqual({ ok: false, reason: 'bad_signature' });
  });

  it('refuses another file, another expiry, another key and an altered signature', () => {
    const q = parse(signer.query('PUT', FILE, NOW + 60));
    const other = FILE.replace('3b', '4b');
    expect(signer.check('PUT', other, q, NOW).ok).toBe(false);
    expect(signer.check('PUT', FILE, { ...q, exp: String(NOW + 61) }, NOW)).toEqual({
      ok: false,
      reason: 'bad_signature',
    });
    expect(new BlobUrlSigner(randomBytes(32)).check('PUT', FILE, q, NOW)).toEqual({
      ok: false,
      reason: 'bad_signature',
    });
    const flipped = `${q.sig![0] === 'A' ? 'B' : 'A'}${q.sig!.slice(1)}`;
    expect(signer.check('PUT', FILE, { ...q, sig: flipped }, NOW)).toEqual({ ok: false, reason: 'bad_signature' });
  });

  it('calls missing or malformed parameters malformed without computing anything', () => {
    const q = parse(signer.query('PUT', FILE, NOW + 60));
    for (const bad of [
      {},
      { ...q, m: 'DELETE' },
      { ...q, m: undefined },
      { ...q, exp: '-1' },
      { ...q, exp: '1e9' },
      { ...q, exp: '9'.repeat(13) },
      { ...q, sig: undefined },
      { ...q, sig: `${q.sig}=` },
      { ...q, sig: 'short' },
      { ...q, n: 'short' },
      { ...q, n: [q.n, q.n] as unknown as string },
      { ...q, sig: [q.sig, q.sig] as unknown as string },
    ]) {
      expect(signer.check('PUT', FILE, bad, NOW)).toEqual({ ok: false, reason: 'malformed' });
    }
  });

  it('refuses a key shorter than 32 bytes', () => {
    expect(() => new BlobUrlSigner(randomBytes(16))).toThrow(/at least 32 bytes/);
  });
});

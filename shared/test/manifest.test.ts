import { describe, expect, it } from 'vitest';
import {
  generateEd25519KeyPair,
  manifestSigningBytes,
  privateKeyFromBase64,
  signManifest,
  verifyManifestEntry,
  type ManifestPayload,
} from '../src/index.js';

const payload: ManifestPayload = {
  agent_id: '6a1d7c38-2f4b-4e0a-9c1d-3e5f7a9b1c2d',
  application_id: '0b6f1a52-7d0e-4c39-9c55-5c4c6c1b0e11',
  slug: 'kiosk',
  channel: 'stable',
  update_workflow: 'apply-update',
  current: { release_id: null, version: '0.9 — ünïcödé', sequence: 0 },
  desired: {
    release_id: 'a1f0c1de-3b1e-4f5f-8d7b-5b7c1f1d2e3f',
    version: '1.0',
    sequence: 1,
    channel: 'stable',
    workflow_name: 'apply-update',
    checksum_sha256: 'ab'.repeat(32),
    size: 1234,
    download_url: 'http://127.0.0.1:8080/v1/storage/blobs/x?m=GET&exp=1&sig=y',
    download_expires_in: 900,
  },
  min_version: '',
  min_sequence: 0,
  forced: false,
  issued_at: 1_767_323_045,
  expires_at: 1_767_326_645,
  nonce: 'bm9uY2Utbm9uY2Utbm9uY2U',
};

describe('signed manifest entries', () => {
  const keys = generateEd25519KeyPair();
  const entry = signManifest(payload, privateKeyFromBase64(keys.privateKey));

  it('serializes with RFC 8785: keys sorted, no whitespace, UTF-8', () => {
    const text = manifestSigningBytes(payload).toString('utf8');
    expect(text.startsWith('{"agent_id":"6a1d7c38-2f4b-4e0a-9c1d-3e5f7a9b1c2d","application_id":"0b6f1a52')).toBe(true);
    expect(text).toContain('"current":{"release_id":null,"sequence":0,"version":"0.9 — ünïcödé"}');
    expect(text).not.toMatch(/\s"|":\s/);
    expect(manifestSigningBytes(payload).equals(Buffer.from(text, 'utf8'))).toBe(true);
  });

  it('verifies with the server public key whatever the key order of the received JSON', () => {
    expect(verifyManifestEntry(entry, keys.publicKey)).toBe(true);
    const reordered = JSON.parse(JSON.stringify({ signature: entry.signature, payload: { ...payload } }));
    const shuffled = Object.fromEntries(Object.entries(reordered.payload).reverse());
    expect(verifyManifestEntry({ payload: shuffled, signature: entry.signature }, keys.publicKey)).toBe(true);
  });

  it('refuses a tampered payload, another key and malformed entries', () => {
    const other = generateEd25519KeyPair();
    expect(verifyManifestEntry({ ...entry, payload: { ...payload, forced: true } }, keys.publicKey)).toBe(false);
    expect(
      verifyManifestEntry({ ...entry, payload: { ...payload, issued_at: payload.issued_at + 1 } }, keys.publicKey),
    ).toBe(false);
    expect(verifyManifestEntry(entry, other.publicKey)).toBe(false);
    for (const bad of [
      null,
      'x',
      {},
      { payload },
      { payload: [], signature: entry.signature },
      { ...entry, signature: 1 },
    ]) {
      expect(verifyManifestEntry(bad, keys.publicKey)).toBe(false);
    }
    expect(verifyManifestEntry(entry, 'not a key')).toBe(false);
  });
});

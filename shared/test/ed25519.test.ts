import { randomBytes } from 'node:crypto';
import * as ed from '@noble/ed25519';
import { sha512 } from '@noble/hashes/sha2.js';
import { describe, expect, it } from 'vitest';
import {
  decodeRawKey,
  generateEd25519KeyPair,
  isValidEd25519PublicKey,
  keyFingerprint,
  privateKeyFromBase64,
  publicKeyFromBase64,
  publicKeyOf,
  signBytes,
  verifyBytes,
} from '../src/index.js';

// noble's synchronous API needs a SHA-512 implementation (noble v3).
ed.hashes.sha512 = sha512;

const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString('base64');
const message = new TextEncoder().encode('DROVER-ED25519-V1\nGET\n/v1/agent/me\n1\nnonce\nhash');

/** The eight small-order points of edwards25519 (libsodium's blocklist, canonical encodings). */
const SMALL_ORDER = [
  '0000000000000000000000000000000000000000000000000000000000000000',
  '0100000000000000000000000000000000000000000000000000000000000000',
  '26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05',
  'c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a',
  'ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f',
  '0000000000000000000000000000000000000000000000000000000000000080',
  '26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc85',
  'c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa',
].map((hex) => Buffer.from(hex, 'hex'));

describe('Ed25519 keys on the wire', () => {
  it('generates a key pair whose halves are standard base64 of 32 raw bytes', () => {
    const keys = generateEd25519KeyPair();
    expect(decodeRawKey(keys.publicKey)).toHaveLength(32);
    expect(decodeRawKey(keys.privateKey)).toHaveLength(32);
    expect(publicKeyOf(privateKeyFromBase64(keys.privateKey))).toBe(keys.publicKey);
  });

  it('derives the same public key from a seed as noble does', () => {
    const keys = generateEd25519KeyPair();
    expect(b64(ed.getPublicKey(Buffer.from(keys.privateKey, 'base64')))).toBe(keys.publicKey);
  });

  it('produces signatures that noble verifies', () => {
    const keys = generateEd25519KeyPair();
    const signature = signBytes(privateKeyFromBase64(keys.privateKey), message);
    const publicKey = Buffer.from(keys.publicKey, 'base64');
    expect(ed.verify(Buffer.from(signature, 'base64'), message, publicKey)).toBe(true);
    expect(ed.verify(Buffer.from(signature, 'base64'), new TextEncoder().encode('other'), publicKey)).toBe(false);
  });

  it('verifies signatures made by noble and refuses them for another message or key', () => {
    const { secretKey, publicKey } = ed.keygen();
    const signature = b64(ed.sign(message, secretKey));
    const key = publicKeyFromBase64(b64(publicKey))!;
    expect(verifyBytes(key, message, signature)).toBe(true);
    expect(verifyBytes(key, new TextEncoder().encode('other'), signature)).toBe(false);
    const otherKey = publicKeyFromBase64(generateEd25519KeyPair().publicKey)!;
    expect(verifyBytes(otherKey, message, signature)).toBe(false);
  });

  it('makes byte-identical signatures to noble for the same seed (Ed25519 is deterministic)', () => {
    const keys = generateEd25519KeyPair();
    const ours = signBytes(privateKeyFromBase64(keys.privateKey), message);
    expect(ours).toBe(b64(ed.sign(message, Buffer.from(keys.privateKey, 'base64'))));
  });

  it('refuses a signature that is not standard base64 of 64 bytes', () => {
    const keys = generateEd25519KeyPair();
    const key = publicKeyFromBase64(keys.publicKey)!;
    const signature = signBytes(privateKeyFromBase64(keys.privateKey), message);
    expect(verifyBytes(key, message, signature.replace(/==$/, ''))).toBe(false);
    expect(verifyBytes(key, message, Buffer.from(signature, 'base64').toString('base64url'))).toBe(false);
    expect(verifyBytes(key, message, b64(randomBytes(63)))).toBe(false);
    expect(verifyBytes(key, message, '')).toBe(false);
  });

  it('decodes raw keys strictly: exact length, standard alphabet, canonical padding', () => {
    const raw = randomBytes(32);
    expect(decodeRawKey(b64(raw))).toEqual(raw);
    expect(decodeRawKey(b64(randomBytes(31)))).toBeNull();
    expect(decodeRawKey(b64(randomBytes(33)))).toBeNull();
    expect(decodeRawKey(Buffer.alloc(32, 0xff).toString('base64url'))).toBeNull(); // `_` and no padding
    expect(decodeRawKey(Buffer.alloc(32, 0xff).toString('base64'))).toEqual(Buffer.alloc(32, 0xff));
    expect(decodeRawKey(` ${b64(raw)}`)).toBeNull();
    expect(decodeRawKey(b64(raw).replace(/=$/, ''))).toBeNull();
    // A non-canonical final character (unused low bits set) decodes to the same bytes: refused.
    const encoded = b64(raw);
    const last = encoded[42]!;
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
    const tweaked = `${encoded.slice(0, 42)}${alphabet[alphabet.indexOf(last) ^ 1]}=`;
    expect(decodeRawKey(tweaked)).toBeNull();
  });

  it('accepts real public keys and refuses small-order points and non-canonical encodings', () => {
    for (let i = 0; i < 20; i++) {
      expect(isValidEd25519PublicKey(Buffer.from(generateEd25519KeyPair().publicKey, 'base64'))).toBe(true);
    }
    for (const raw of SMALL_ORDER) {
      expect(isValidEd25519PublicKey(raw), raw.toString('hex')).toBe(false);
      expect(publicKeyFromBase64(b64(raw))).toBeNull();
    }
    // y = p (non-canonical encoding of y = 0) and y = p + 1 (of the identity).
    const p = Buffer.from('edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f', 'hex');
    const p1 = Buffer.from('eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f', 'hex');
    expect(isValidEd25519PublicKey(p)).toBe(false);
    expect(isValidEd25519PublicKey(p1)).toBe(false);
    expect(isValidEd25519PublicKey(randomBytes(31))).toBe(false);
  });

  it('checks the point only when asked to, for keys already checked when stored', () => {
    const identity = b64(SMALL_ORDER[1]!);
    expect(publicKeyFromBase64(identity)).toBeNull();
    expect(publicKeyFromBase64(identity, { validatePoint: false })).not.toBeNull();
    expect(publicKeyFromBase64('not base64', { validatePoint: false })).toBeNull();
  });

  it('fingerprints a key as ssh does: SHA256 and unpadded base64', () => {
    const keys = generateEd25519KeyPair();
    const fingerprint = keyFingerprint(keys.publicKey);
    expect(fingerprint).toMatch(/^SHA256:[A-Za-z0-9+/]{43}$/);
    expect(keyFingerprint(keys.publicKey)).toBe(fingerprint);
    expect(keyFingerprint(generateEd25519KeyPair().publicKey)).not.toBe(fingerprint);
    expect(() => keyFingerprint('short')).toThrow(/32 raw bytes/);
  });
});

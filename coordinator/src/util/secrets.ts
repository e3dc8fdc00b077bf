import { hash, randomBytes, timingSafeEqual } from 'node:crypto';

/** A bearer secret: prefix + 32 random bytes as base64url (43 characters). */
export function newBearerSecret(prefix: string): string {
  return `${prefix}${randomBytes(32).toString('base64url')}`;
}

/**
 * Bearer secrets carry 256 bits of randomness, so a plain SHA-256 is a safe lookup hash for them
 * (unlike passwords, which use scrypt). Only the hash is stored.
 */
export function hashBearerSecret(secret: string): string {
  // The one-shot hash: no Hash object per call, and this runs on every API-token request.
  return hash('sha256', secret, 'hex');
}

/** A short non-secret hint for lists: prefix and the last four characters. */
export function secretHint(secret: string, prefix: string): string {
  return `${prefix}…${secret.slice(-4)}`;
}

export function constantTimeEqual(a: string, b: string): boolean {
  const ab = Buffer.from(a);
  const bb = Buffer.from(b);
  return ab.length === bb.length && timingSafeEqual(ab, bb);
}

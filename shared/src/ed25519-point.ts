import { Point } from '@noble/ed25519';

/**
 * Ed25519 public key validation. node:crypto imports any 32 bytes as an Ed25519 public key
 * without checking that they encode a curve point. A key that is not a point never verifies
 * anything, which is merely useless; a small-order point (the identity, for one) is worse:
 * signatures "verify" for messages nobody signed. So a key received from outside is decoded
 * with @noble/ed25519 (strict RFC 8032 decoding: canonical encodings only) before it is stored.
 */
export function isValidEd25519PublicKey(raw: Uint8Array): boolean {
  if (raw.length !== 32) return false;
  try {
    return !Point.fromBytes(raw, false).isSmallOrder();
  } catch {
    return false;
  }
}

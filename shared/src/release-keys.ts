import type { KeyObject } from 'node:crypto';
import { canonicalJsonBytes } from './canonical-json.js';
import { decodeRawKey, publicKeyFromBase64, publicKeyOf, signBytes, verifyBytes } from './ed25519.js';

/**
 * Release keys (docs/ota.md, "Release keys"): Ed25519 keys kept off the coordinator that sign an
 * application's releases, so that a coordinator broken into can neither make a device install
 * what the keys did not sign nor swap the keys. The coordinator checks each release's signature at
 * creation, the agent again before installing; a key set changes only through a rotation signed
 * by a key of the set before it. The CLI signs (`drover release sign`, `drover release rotate-keys`).
 */

/** The fields a release signature covers; signed over their RFC 8785 serialization. */
export interface SignedReleaseFields {
  /** The application's slug. */
  app: string;
  version: string;
  sequence: number;
  /** The artifact's SHA-256, lowercase hex. */
  sha256: string;
  /** The artifact's size in bytes. */
  size: number;
}

/** The most keys an application may list. */
export const MAX_RELEASE_KEYS = 10;

/** A release key as the API carries it: standard base64 of the raw 32-byte Ed25519 public key. */
export const RELEASE_KEY_PATTERN = '^[A-Za-z0-9+/]{43}=$';

/**
 * A statement that an application's release keys change to `keys`, signed by `signedBy`, a key of
 * the set it replaces. `generation` counts the changes (the first set is generation 0): a device
 * accepts only a higher generation than the one it pinned, so an old statement cannot bring back
 * an old set.
 */
export interface ReleaseKeyRotation {
  app: string;
  generation: number;
  /** The new key set (standard base64 each), sorted. */
  keys: string[];
  /** The public key that signed, one of the previous set. */
  signedBy: string;
  /** Standard base64 Ed25519 over the RFC 8785 serialization of `{app, generation, keys}`. */
  signature: string;
}

/** The bytes a release signature covers. */
export function releaseSigningBytes(fields: SignedReleaseFields): Buffer {
  const { app, version, sequence, sha256, size } = fields;
  return canonicalJsonBytes({ app, version, sequence, sha256: sha256.toLowerCase(), size });
}

/** The signature of a release with a private release key (standard base64). */
export function signRelease(fields: SignedReleaseFields, privateKey: KeyObject): string {
  return signBytes(privateKey, releaseSigningBytes(fields));
}

/** The first of `keys` whose signature `signature` is over the release, or null. */
export function releaseSignedBy(
  fields: SignedReleaseFields,
  signature: string,
  keys: readonly string[],
): string | null {
  const bytes = releaseSigningBytes(fields);
  for (const key of keys) {
    const publicKey = publicKeyFromBase64(key);
    if (publicKey && verifyBytes(publicKey, bytes, signature)) return key;
  }
  return null;
}

/** A key set in its one order (sorted, without repeats): sets compare by this. */
export const sortedKeys = (keys: readonly string[]): string[] => [...new Set(keys)].sort();

export const sameKeys = (a: readonly string[], b: readonly string[]): boolean =>
  JSON.stringify(sortedKeys(a)) === JSON.stringify(sortedKeys(b));

/** What is wrong with a release key (for a validation message), or null: a usable Ed25519 public key. */
export function releaseKeyProblem(key: string): string | null {
  if (!decodeRawKey(key)) return `expected the standard base64 of a raw 32-byte Ed25519 public key, got \`${key}\``;
  if (!publicKeyFromBase64(key))
    return 'is not a usable Ed25519 public key (not a point of the curve, or of small order)';
  return null;
}

/** The bytes a rotation's signature covers. */
export function rotationSigningBytes(rotation: Pick<ReleaseKeyRotation, 'app' | 'generation' | 'keys'>): Buffer {
  return canonicalJsonBytes({ app: rotation.app, generation: rotation.generation, keys: sortedKeys(rotation.keys) });
}

/** A rotation to `keys`, signed with a private key of the current set. */
export function signRotation(
  fields: { app: string; generation: number; keys: readonly string[] },
  privateKey: KeyObject,
): ReleaseKeyRotation {
  const keys = sortedKeys(fields.keys);
  const body = { app: fields.app, generation: fields.generation, keys };
  return { ...body, signedBy: publicKeyOf(privateKey), signature: signBytes(privateKey, rotationSigningBytes(body)) };
}

/**
 * Why `rotation` does not move the key set `from` (of generation `fromGeneration`) of application
 * `app`, or null when it does: it must name the app, a higher generation, one to `MAX_RELEASE_KEYS`
 * usable keys, and be signed by a key of `from`.
 */
export function rotationProblem(
  rotation: unknown,
  app: string,
  from: readonly string[],
  fromGeneration: number,
): string | null {
  if (typeof rotation !== 'object' || rotation === null) return 'is not a rotation statement';
  const r = rotation as Partial<Record<keyof ReleaseKeyRotation, unknown>>;
  if (r.app !== app) return `names the application \`${String(r.app)}\`, not \`${app}\``;
  if (!Number.isSafeInteger(r.generation) || (r.generation as number) <= fromGeneration) {
    return `has generation ${String(r.generation)}, expected more than ${fromGeneration} (the current key set's)`;
  }
  if (!Array.isArray(r.keys) || r.keys.length === 0 || r.keys.length > MAX_RELEASE_KEYS) {
    return `must name 1 to ${MAX_RELEASE_KEYS} keys`;
  }
  for (const key of r.keys) {
    if (typeof key !== 'string' || releaseKeyProblem(key)) return `names a key that is not an Ed25519 public key`;
  }
  if (typeof r.signedBy !== 'string' || !from.includes(r.signedBy)) {
    return 'is not signed by a key of the current set (signedBy must be one of them)';
  }
  const signer = publicKeyFromBase64(r.signedBy);
  const bytes = rotationSigningBytes({ app, generation: r.generation as number, keys: r.keys as string[] });
  if (!signer || typeof r.signature !== 'string' || !verifyBytes(signer, bytes, r.signature)) {
    return 'has a signature that does not verify with its signedBy key';
  }
  return null;
}

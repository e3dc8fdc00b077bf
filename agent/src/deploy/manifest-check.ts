import type { KeyObject } from 'node:crypto';
import { verifyManifestEntry, type ManifestCurrent, type ManifestDesired, type ManifestPayload } from '@drover/shared';
import { isObject } from '../util/is-object.js';

/** Why a manifest entry is not trusted. */
export type ManifestProblem = 'bad_signature' | 'malformed' | 'replayed';

export type ManifestCheck =
  | { ok: true; payload: ManifestPayload }
  | {
      ok: false;
      problem: ManifestProblem;
      /** The entry's application id when it can be read (even from an untrusted payload). */
      applicationId: string | null;
      message: string;
    };

const SHA256_HEX = /^[0-9a-f]{64}$/i;

/**
 * Checks one entry of `GET /v1/agent/deploy/desired` (docs/ota.md, docs/agent.md "Over-the-air
 * updates"): the Ed25519 signature over the RFC 8785 serialization of its payload must verify with
 * the server key pinned at enrollment (never a key the coordinator sends now), the payload must
 * have the documented shape, and its `issued_at` must not be older than the last entry accepted
 * for that application (`lastIssuedAt`): an old manifest replayed is refused.
 */
export function checkManifestEntry(
  entry: unknown,
  serverKey: KeyObject,
  lastIssuedAt: (applicationId: string) => number | null,
): ManifestCheck {
  const applicationId = readApplicationId(entry);
  if (!verifyManifestEntry(entry, serverKey)) {
    return {
      ok: false,
      problem: 'bad_signature',
      applicationId,
      message: 'the manifest signature does not verify with the server key pinned at enrollment',
    };
  }
  const payload = (entry as { payload: unknown }).payload;
  const shape = payloadProblem(payload);
  if (shape) return { ok: false, problem: 'malformed', applicationId, message: `the signed manifest ${shape}` };
  const p = payload as ManifestPayload;
  const last = lastIssuedAt(p.application_id);
  if (last !== null && p.issued_at < last) {
    return {
      ok: false,
      problem: 'replayed',
      applicationId,
      message: `the signed manifest was issued at ${isoSeconds(p.issued_at)}, before the last one accepted (${isoSeconds(last)}): an old manifest replayed`,
    };
  }
  return { ok: true, payload: p };
}

function readApplicationId(entry: unknown): string | null {
  const payload = isObject(entry) ? entry.payload : undefined;
  const id = isObject(payload) ? payload.application_id : undefined;
  return typeof id === 'string' && id.length <= 100 ? id : null;
}

/** What is wrong with a payload's shape, or null. */
export function payloadProblem(payload: unknown): string | null {
  if (!isObject(payload)) return 'payload is not an object';
  const p = payload;
  for (const key of ['application_id', 'slug', 'channel', 'update_workflow', 'min_version', 'nonce'] as const) {
    if (typeof p[key] !== 'string') return `has no \`${key}\` string`;
  }
  if (!Number.isSafeInteger(p.min_sequence)) return 'has no integer `min_sequence`';
  if (!Number.isSafeInteger(p.issued_at)) return 'has no integer `issued_at`';
  if (typeof p.forced !== 'boolean') return 'has no boolean `forced`';
  const current = p.current === null ? null : currentProblem(p.current);
  if (current) return `has a bad \`current\`: ${current}`;
  const desired = p.desired === null ? null : desiredProblem(p.desired);
  if (desired) return `has a bad \`desired\`: ${desired}`;
  return null;
}

function currentProblem(value: unknown): string | null {
  if (!isObject(value)) return 'not an object';
  const c = value as Partial<Record<keyof ManifestCurrent, unknown>>;
  if (c.release_id !== null && typeof c.release_id !== 'string') return '`release_id` is not a string';
  if (typeof c.version !== 'string') return '`version` is not a string';
  if (!Number.isSafeInteger(c.sequence)) return '`sequence` is not an integer';
  return null;
}

function desiredProblem(value: unknown): string | null {
  if (!isObject(value)) return 'not an object';
  const d = value as Partial<Record<keyof ManifestDesired, unknown>>;
  for (const key of ['release_id', 'version', 'channel', 'workflow_name', 'download_url'] as const) {
    if (typeof d[key] !== 'string') return `\`${key}\` is not a string`;
  }
  if (typeof d.checksum_sha256 !== 'string' || !SHA256_HEX.test(d.checksum_sha256)) {
    return '`checksum_sha256` is not a SHA-256 in hex';
  }
  if (!Number.isSafeInteger(d.sequence)) return '`sequence` is not an integer';
  if (!Number.isSafeInteger(d.size) || (d.size as number) < 0) return '`size` is not a byte count';
  if (!Number.isSafeInteger(d.download_expires_in)) return '`download_expires_in` is not an integer';
  return null;
}

const isoSeconds = (seconds: number): string => {
  const date = new Date(seconds * 1000);
  return Number.isNaN(date.getTime()) ? String(seconds) : date.toISOString().replace('.000Z', 'Z');
};

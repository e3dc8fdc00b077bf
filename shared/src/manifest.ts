import type { KeyObject } from 'node:crypto';
import { canonicalJsonBytes } from './canonical-json.js';
import { publicKeyFromBase64, signBytes, verifyBytes } from './ed25519.js';
import type { ReleaseKeyRotation } from './release-keys.js';
import type { FileRef, InputFileRef } from './file-refs.js';
import type { JobAssignment } from './jobs.js';
import { UUID_PATTERN } from './uuid.js';

/**
 * Over-the-air deployment on the wire (docs/ota.md): the signed manifest of `GET /v1/agent/deploy/desired`, the report
 * of `POST /v1/agent/deploy/report` and the `deploy` event. The coordinator signs and the agent
 * verifies with the functions below, so both serialize the payload the same way (RFC 8785).
 */

/** The installation a device reports (`state` of a binding; docs/ota.md). */
export const DEVICE_STATES = [
  'idle',
  'downloading',
  'verifying',
  'installing',
  'installed',
  'failed',
  'refused',
  'postponed',
] as const;
export type DeviceState = (typeof DEVICE_STATES)[number];

/** A release as the manifest names an installation: `current`. `release_id` is null when unknown. */
export interface ManifestCurrent {
  release_id: string | null;
  version: string;
  sequence: number;
}

/** The release a device should converge to, with a fresh download URL. */
export interface ManifestDesired {
  release_id: string;
  version: string;
  sequence: number;
  channel: string;
  workflow_name: string;
  checksum_sha256: string;
  size: number;
  download_url: string;
  /** Seconds the URL stays valid from `issued_at`. */
  download_expires_in: number;
  /**
   * Only when the application has release keys: the release's signature by one of them (null: the
   * release was created unsigned, before the keys), which the agent verifies with the keys it pinned.
   */
  signature?: string | null;
}

/** The signed content of one manifest entry (the field names of docs/ota.md). */
export interface ManifestPayload {
  /** The agent this entry was issued to: another agent refuses it. */
  agent_id: string;
  application_id: string;
  slug: string;
  channel: string;
  update_workflow: string;
  current: ManifestCurrent | null;
  desired: ManifestDesired | null;
  min_version: string;
  min_sequence: number;
  forced: boolean;
  /** Unix seconds. */
  issued_at: number;
  /** Unix seconds, on the coordinator's clock: an agent refuses the entry from then on. */
  expires_at: number;
  /** Only when the application has release keys (docs/ota.md, "Release keys"): the current set, sorted. */
  release_keys?: string[];
  /** With `release_keys`: how many rotations led to them (0: the first set). */
  release_key_generation?: number;
  /** With `release_keys`, when there were any: the rotations, oldest first, for a device to follow from the set it pinned. */
  release_key_rotations?: ReleaseKeyRotation[];
  /** 16 random bytes or more, base64url. */
  nonce: string;
  /**
   * The `X-Nonce` of the signed request this entry answers (coordinators since 2026-11-30): the
   * agent that sent it knows the entry was issued for that request, now.
   */
  request_nonce?: string;
}

export interface ManifestEntry {
  payload: ManifestPayload;
  /** Standard base64 Ed25519 signature over the UTF-8 bytes of `canonicalize(payload)`. */
  signature: string;
}

/** `GET /v1/agent/deploy/desired`: one entry per application bound to the calling agent. */
export interface DesiredManifestResponse {
  apps: ManifestEntry[];
}

/** The bytes that are signed: the RFC 8785 (JCS) serialization of the payload, UTF-8. */
export function manifestSigningBytes(payload: ManifestPayload): Buffer {
  return canonicalJsonBytes(payload);
}

/** Signs a payload with a private Ed25519 key (the coordinator's server key). */
export function signManifest(payload: ManifestPayload, privateKey: KeyObject): ManifestEntry {
  return { payload, signature: signBytes(privateKey, manifestSigningBytes(payload)) };
}

/**
 * Whether `entry.signature` is the server's signature over `entry.payload`. `serverPublicKey` is
 * the key pinned at enrollment (standard base64 of the raw 32 bytes, or a KeyObject). Anything
 * malformed (not an object, a payload that cannot be serialized) is simply not verified.
 */
export function verifyManifestEntry(entry: unknown, serverPublicKey: KeyObject | string): boolean {
  if (typeof entry !== 'object' || entry === null) return false;
  const { payload, signature } = entry as { payload?: unknown; signature?: unknown };
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) return false;
  if (typeof signature !== 'string') return false;
  const key = typeof serverPublicKey === 'string' ? publicKeyFromBase64(serverPublicKey) : serverPublicKey;
  if (!key) return false;
  let bytes: Buffer;
  try {
    bytes = manifestSigningBytes(payload as ManifestPayload);
  } catch {
    return false;
  }
  return verifyBytes(key, bytes, signature);
}

/** The params of an update job as stored: the artifact without a URL. */
export interface DeployParams {
  artifact: FileRef;
  release_id: string;
  version: string;
  channel: string;
  sequence: number;
  forced: boolean;
  checksum_sha256: string;
}

/**
 * Data of a `deploy` event (its SSE `id` is the job id): a `JobAssignment` of kind `update` for
 * the application's update workflow, with the application id, and params whose `artifact`
 * carries a fresh `downloadUrl` (and `size`, `sha256`, `filename`) at every send. The agent
 * answers it with the ordinary job calls (`/v1/agent/jobs/:jobId/...`).
 */
export interface DeployAssignment extends JobAssignment {
  kind: 'update';
  applicationId: string;
  params: Omit<DeployParams, 'artifact'> & { artifact: InputFileRef };
  /**
   * Sent during a publish to many devices (docs/ota.md, "The `deploy` event"): the agent starts
   * the job at a random moment within this many ms, so that the fleet's follow-up requests
   * spread. Absent or 0: at once. Not kept with the job.
   */
  startWithinMs?: number;
}

/** Text without control characters (an installed version as the device reports it). */
export const NO_CONTROL_CHARACTERS_PATTERN = '^[^\\u0000-\\u001f\\u007f]+$';

/** `POST /v1/agent/deploy/report`: what the device observes (docs/ota.md). */
export const DeployReportRequest = {
  type: 'object',
  additionalProperties: false,
  required: ['applicationId'],
  properties: {
    applicationId: { type: 'string', pattern: UUID_PATTERN },
    // Text without control characters, as release versions are (it is echoed in signed manifests).
    currentVersion: { type: 'string', minLength: 1, maxLength: 255, pattern: NO_CONTROL_CHARACTERS_PATTERN },
    currentReleaseId: { type: 'string', pattern: UUID_PATTERN },
    currentSequence: { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER },
    state: { type: 'string', enum: DEVICE_STATES },
    error: { type: ['string', 'null'], maxLength: 2000 },
  },
} as const;
export interface DeployReportRequest {
  applicationId: string;
  currentVersion?: string;
  currentReleaseId?: string;
  currentSequence?: number;
  state?: DeviceState;
  error?: string | null;
}

/** A release named in the coordinator's camelCase answers. */
export interface ReleaseRef {
  releaseId: string | null;
  version: string;
  sequence: number;
}

/** Answer of the report: the binding as the agent sees it after the re-evaluation. */
export interface DeployReportResponse {
  applicationId: string;
  current: ReleaseRef | null;
  desired: ReleaseRef | null;
  forced: boolean;
  state: DeviceState | null;
  activeJobId: string | null;
}

import type { KeyObject } from 'node:crypto';
import { verifyManifestEntry, type ManifestCurrent, type ManifestDesired, type ManifestPayload } from '@drover/shared';
import { isObject } from '../util/is-object.js';
import type { InstalledRelease, PinnedReleaseKeys } from './deploy-state.js';
import { checkReleaseKeys, otherPinsProblem, type OtherPin } from './release-keys-check.js';

/** Why a manifest entry is not trusted (each has its own message; docs/agent.md, "Log lines of updates"). */
export type ManifestProblem =
  | 'bad_signature'
  | 'malformed'
  | 'other_agent'
  | 'expired'
  | 'replayed'
  | 'downgrade'
  | 'key_swap'
  | 'unsigned_release'
  | 'other_application';

export type ManifestCheck =
  | {
      ok: true;
      payload: ManifestPayload;
      /** It carries the nonce of the request it answers: issued for that request, now. */
      fresh?: boolean;
      /**
       * Set when the entry has no `agent_id`/`expires_at` (a coordinator older than this agent):
       * accepted without the binding and expiry checks, with this warning for the log.
       */
      unbound?: string;
      /** Release keys to pin now (first sight, or a rotation), with the line that says so. */
      pin?: { keys: PinnedReleaseKeys; note: string };
      /** The desired release is the one installed, not signed by the pinned keys: kept, never installed again. */
      installedUnsigned?: string;
    }
  | {
      ok: false;
      problem: ManifestProblem;
      /** The entry's application id when it can be read (even from an untrusted payload). */
      applicationId: string | null;
      message: string;
    };

/** What an entry is checked against besides the pinned key: this agent and what it accepted and installed. */
export interface ManifestCheckContext {
  /** This agent's id (agent.json): an entry bound to another agent is refused. */
  agentId: string;
  /** Unix seconds on the coordinator's clock as this agent knows it (its clock corrected; server-clock.ts). */
  nowSeconds: number;
  /** The `X-Nonce` of the request the entry came in answer to: an entry carrying it back is fresh. */
  requestNonce?: string;
  /** Whether the coordinator bound an earlier entry of the application to its request (persisted). */
  requestBound?(applicationId: string): boolean;
  /** `issued_at` of the last entry accepted for the application (persisted in deploy/state.json). */
  lastIssuedAt(applicationId: string): number | null;
  /** The release this agent installed for the application, with its channel when recorded. */
  installed(applicationId: string): InstalledRelease | null;
  /** The application's release keys this agent pinned (null: none yet). */
  pinnedKeys(applicationId: string): PinnedReleaseKeys | null;
  /**
   * Every set of release keys this agent pinned, by application id, with the release installed
   * there: a pin also binds its slug and update workflows, whatever the application id
   * (otherPinsProblem). Absent: none.
   */
  allPins?(): OtherPin[];
}

const SHA256_HEX = /^[0-9a-f]{64}$/i;

/**
 * Checks one entry of `GET /v1/agent/deploy/desired` (docs/ota.md, docs/agent.md "Over-the-air
 * updates"), in this order:
 * - the Ed25519 signature over the RFC 8785 serialization of its payload must verify with the
 *   server key pinned at enrollment (never a key the coordinator sends now), and the payload must
 *   have the documented shape;
 * - it must be bound to this agent (`agent_id`) and not expired (`expires_at`, by the coordinator's
 *   clock as corrected here); an entry with neither field comes from an older coordinator and is
 *   accepted with a warning (`unbound`);
 * - an entry that carries back the nonce of the request it answers (`request_nonce`) is fresh:
 *   issued for this request, now, so neither its expiry nor the order of `issued_at` is asked of
 *   it (the clock is learned from the answer's unsigned `Date` header, which a replayed answer
 *   brings along, and two coordinators' clocks may be a second apart). One that carries another
 *   nonce answered another request, and one without a nonce, after the coordinator bound the
 *   application's entries before, is refused as replayed;
 * - otherwise its `issued_at` must not be older than the last entry accepted for that
 *   application: an old manifest replayed is refused (the time is persisted, so this holds across
 *   restarts);
 * - its desired release must not have a lower `sequence` than the installed one, unless the
 *   installed release was yanked (`forced`) or the binding moved to another channel; under release
 *   keys, whatever either says (downgradeProblem);
 * - with release keys, the keys must be those pinned (or follow from them by signed rotations) and
 *   the desired release must be signed by one of them (release-keys-check.ts);
 * - keys pinned under another application id bind their slug and update workflows too: an entry
 *   sharing either must pass them (otherPinsProblem).
 */
export function checkManifestEntry(entry: unknown, serverKey: KeyObject, context: ManifestCheckContext): ManifestCheck {
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
  const refuse = (problem: ManifestProblem, message: string): ManifestCheck => ({
    ok: false,
    problem,
    applicationId,
    message,
  });
  const bound = (p as Partial<ManifestPayload>).agent_id !== undefined;
  if (bound && p.agent_id.toLowerCase() !== context.agentId.toLowerCase()) {
    return refuse(
      'other_agent',
      `the signed manifest was issued to agent ${p.agent_id}, not to this agent (${context.agentId}): a manifest of another device`,
    );
  }
  const fresh = p.request_nonce !== undefined && p.request_nonce === context.requestNonce;
  if (p.request_nonce !== undefined && !fresh) {
    return refuse(
      'replayed',
      'the signed manifest answers another request than this one (its request nonce differs): a manifest held back or replayed',
    );
  }
  if (p.request_nonce === undefined && context.requestBound?.(p.application_id)) {
    return refuse(
      'replayed',
      'the signed manifest is not bound to this request, though the coordinator bound the earlier ones: an old manifest replayed (or the coordinator downgraded)',
    );
  }
  if (!fresh && (p as Partial<ManifestPayload>).expires_at !== undefined && p.expires_at <= context.nowSeconds) {
    return refuse(
      'expired',
      `the signed manifest expired at ${isoSeconds(p.expires_at)} (coordinator time now ${isoSeconds(context.nowSeconds)}): a stale manifest held back or replayed`,
    );
  }
  const last = context.lastIssuedAt(p.application_id);
  if (!fresh && last !== null && p.issued_at < last) {
    return refuse(
      'replayed',
      `the signed manifest was issued at ${isoSeconds(p.issued_at)}, before the last one accepted (${isoSeconds(last)}): an old manifest replayed`,
    );
  }
  const installed = context.installed(p.application_id);
  const pinned = context.pinnedKeys(p.application_id);
  const downgrade = downgradeProblem(p, installed, pinned !== null || p.release_keys !== undefined);
  if (downgrade) return refuse('downgrade', downgrade);
  const keys = checkReleaseKeys(p, pinned, installed);
  if (!keys.ok) return refuse(keys.problem, keys.message);
  const others = otherPinsProblem(p, context.allPins?.() ?? []);
  if (others) return refuse(others.problem, others.message);
  const pin = {
    ...(keys.pin ? { pin: keys.pin } : {}),
    ...(keys.installedUnsigned ? { installedUnsigned: keys.installedUnsigned } : {}),
  };
  if (!bound || (p as Partial<ManifestPayload>).expires_at === undefined) {
    return {
      ok: true,
      payload: p,
      unbound: `the signed manifest of ${p.slug} names no agent or expiry (a coordinator older than this agent): accepted without the device-binding and expiry checks; upgrade the coordinator`,
      ...pin,
    };
  }
  return { ok: true, payload: p, ...pin, ...(fresh ? { fresh } : {}) };
}

/**
 * Why the desired release is an unexplained downgrade, or null. Under release keys (`keyed`: the
 * application's keys are pinned here or named by the entry) only the signed sequence counts: a
 * lower one than installed is refused whatever the entry's `forced` and channel, which the
 * coordinator alone sets (a yank, a channel move) and a broken-into coordinator could set to roll
 * a device back to an older signed release; going back is a new release, the older artifact signed
 * again with a higher sequence. Without keys, a lower sequence is accepted when the installed
 * release was yanked (the entry is `forced`) or the binding's channel is not the installed
 * release's (the operator moved the device); an installed release recorded without its channel
 * (by an agent older than this one) cannot tell: accepted.
 */
export function downgradeProblem(
  payload: ManifestPayload,
  installed: InstalledRelease | null,
  keyed = false,
): string | null {
  const desired = payload.desired;
  if (!desired || !installed || desired.sequence >= installed.sequence) return null;
  const asks =
    `the signed manifest asks for ${payload.slug} ${desired.version} (sequence ${desired.sequence}), older than the installed ` +
    `${installed.version} (sequence ${installed.sequence})`;
  if (keyed) {
    return (
      `${asks}, and the releases of ${payload.slug} are signed with release keys: a downgrade refused whatever the channel ` +
      `or a yank (neither is signed); to go back, sign the older artifact again as a release with a higher sequence`
    );
  }
  if (payload.forced) return null;
  if (installed.channel === undefined || installed.channel !== desired.channel) return null;
  return `${asks} on the same channel ${desired.channel}, and the installed release was not yanked: a downgrade refused`;
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
  // Absent from coordinators older than this agent; when present, of the documented type.
  if (p.agent_id !== undefined && typeof p.agent_id !== 'string') return 'has an `agent_id` that is not a string';
  if (p.expires_at !== undefined && !Number.isSafeInteger(p.expires_at))
    return 'has an `expires_at` that is not an integer';
  if (p.request_nonce !== undefined && typeof p.request_nonce !== 'string')
    return 'has a `request_nonce` that is not a string';
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

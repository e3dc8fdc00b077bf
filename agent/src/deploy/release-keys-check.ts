import { releaseSignedBy, rotationProblem, sameKeys, sortedKeys, type ManifestPayload } from '@drover/shared';
import type { InstalledRelease, PinnedReleaseKeys } from './deploy-state.js';

export type ReleaseKeysCheck =
  | {
      ok: true;
      /** The keys to pin now (first sight, or after a rotation), with the line saying so; absent: unchanged. */
      pin?: { keys: PinnedReleaseKeys; note: string };
      /**
       * Set when the desired release is the one installed and the pinned keys did not sign it (it
       * was installed before the keys): the device keeps running it, but must not download and
       * install it again; the refusal an update job ends with.
       */
      installedUnsigned?: string;
    }
  | { ok: false; problem: 'key_swap' | 'unsigned_release' | 'other_application'; message: string };

/**
 * The release keys of a verified manifest entry against those this agent pinned for the
 * application (docs/ota.md, "Release keys"). The first keys seen are pinned; a different set is
 * accepted only when the entry's rotations lead from the pinned set to it, each signed by a key of
 * the set before it and of a higher generation; an entry without keys after a pin is refused. Then
 * the desired release must be signed by a key of that set over `{app, version, sequence, sha256,
 * size}`; the one installed may go unsigned (the device keeps it), with `installedUnsigned` saying
 * it must not be installed again. So a coordinator alone can neither make this device install a
 * release the keys did not sign, nor swap the keys.
 */
export function checkReleaseKeys(
  payload: ManifestPayload,
  pinned: PinnedReleaseKeys | null,
  installed: InstalledRelease | null,
): ReleaseKeysCheck {
  const slug = payload.slug;
  const offered = payload.release_keys;
  if (offered === undefined) {
    if (!pinned) return { ok: true };
    return {
      ok: false,
      problem: 'key_swap',
      message: `the signed manifest names no release keys for ${slug}, but this device pinned ${describeKeys(pinned.keys)}: releases it cannot verify are refused`,
    };
  }
  if (pinned?.slug !== undefined && pinned.slug !== slug) {
    return {
      ok: false,
      problem: 'other_application',
      message: `the signed manifest names application ${payload.application_id} ${slug}, but this device pinned its release keys as those of ${pinned.slug} (a slug cannot change): a release signed for another application refused`,
    };
  }
  const generation = payload.release_key_generation ?? 0;
  let pin: { keys: PinnedReleaseKeys; note: string } | undefined;
  let keys: readonly string[];
  if (!pinned) {
    keys = sortedKeys(offered);
    pin = {
      keys: { keys: [...keys], generation, slug, workflows: [payload.update_workflow] },
      note: `pinned the release keys of ${slug} on first sight: ${describeKeys(keys)} (generation ${generation})`,
    };
  } else if (sameKeys(pinned.keys, offered)) {
    keys = pinned.keys;
    // A pin of an older agent, without the slug: recorded now, with keys that did not change.
    if (pinned.slug === undefined) {
      pin = { keys: { ...pinned, slug }, note: `recorded the slug ${slug} with the release keys pinned for it` };
    }
  } else {
    const followed = followRotations(payload, pinned);
    if (!followed || !sameKeys(followed.keys, offered)) {
      return {
        ok: false,
        problem: 'key_swap',
        message: `the release keys of ${slug} changed to ${describeKeys(offered)} without a rotation signed by a key this device pinned (${describeKeys(pinned.keys)}, generation ${pinned.generation}): a key swap refused`,
      };
    }
    keys = followed.keys;
    pin = {
      keys: { ...followed, slug, ...(pinned.workflows ? { workflows: pinned.workflows } : {}) },
      note: `the release keys of ${slug} rotated to ${describeKeys(keys)} (generation ${followed.generation}), signed by a key this device had pinned`,
    };
  }
  // The update workflow an entry under these keys names is bound to them from now on (otherPinsProblem).
  const workflow = payload.update_workflow;
  const held = pin?.keys ?? pinned!;
  if (!(held.workflows ?? []).includes(workflow)) {
    pin = {
      keys: { ...held, workflows: [...(held.workflows ?? []), workflow] },
      note: pin
        ? `${pin.note}; the update workflow ${workflow} is bound to them`
        : `bound the update workflow ${workflow} to the release keys of ${slug} (${describeKeys(keys)}): an entry naming it, whatever its application, must be signed by them`,
    };
  }
  const desired = payload.desired;
  const pinning = pin ? { pin } : {};
  if (!desired) return { ok: true, ...pinning };
  const fields = {
    app: slug,
    version: desired.version,
    sequence: desired.sequence,
    sha256: desired.checksum_sha256,
    size: desired.size,
  };
  const signature = desired.signature;
  if (typeof signature === 'string' && releaseSignedBy(fields, signature, keys) !== null)
    return { ok: true, ...pinning };
  const message = `release ${desired.version} (sequence ${desired.sequence}) of ${slug} is ${typeof signature === 'string' ? 'not signed by' : 'unsigned, but needs a signature by'} one of the release keys this device pinned (${describeKeys(keys)})`;
  if (installed?.releaseId.toLowerCase() === desired.release_id.toLowerCase()) {
    return {
      ok: true,
      ...pinning,
      installedUnsigned: `${message}: the installed release is kept, not installed again`,
    };
  }
  return { ok: false, problem: 'unsigned_release', message };
}

/** Release keys this agent pinned under another application id than the entry's, with what it installed there. */
export interface OtherPin {
  applicationId: string;
  keys: PinnedReleaseKeys;
  installed: InstalledRelease | null;
}

/**
 * Why an entry is refused by the release keys this agent pinned under **other** application ids,
 * or null. A pin binds what it was made for, not only the coordinator-chosen application id: its
 * slug and the update workflows its entries named (the built-in `drover-agent-update` included).
 * An entry of any application id that shares either must name the same slug, carry those keys (or
 * a signed rotation from them), have its desired release signed by them, and not ask for a lower
 * signed sequence than the one installed under that pin. So a coordinator cannot reach a pinned
 * installer through a new application id, unsigned, under other keys, or with an older release.
 */
export function otherPinsProblem(
  payload: ManifestPayload,
  others: readonly OtherPin[],
): { problem: 'key_swap' | 'unsigned_release' | 'other_application' | 'downgrade'; message: string } | null {
  const own = payload.application_id.toLowerCase();
  for (const other of others) {
    if (other.applicationId.toLowerCase() === own) continue;
    const pin = other.keys;
    const byWorkflow = (pin.workflows ?? []).includes(payload.update_workflow);
    const bySlug = pin.slug !== undefined && pin.slug === payload.slug;
    if (!byWorkflow && !bySlug) continue;
    const what = byWorkflow ? `the update workflow ${payload.update_workflow}` : `the slug ${payload.slug}`;
    const owner = `application ${other.applicationId}${pin.slug === undefined ? '' : ` (${pin.slug})`}`;
    const bound = `${what} is bound to the release keys this device pinned for ${owner}, whatever the application id`;
    if (pin.slug !== undefined && pin.slug !== payload.slug) {
      return {
        problem: 'other_application',
        message: `the signed manifest names application ${payload.application_id} ${payload.slug}, but ${bound}, as those of ${pin.slug}: a release for another application refused`,
      };
    }
    // Never "installed, kept": this application id installed nothing under these keys.
    const check = checkReleaseKeys(payload, pin, null);
    if (!check.ok) return { problem: check.problem, message: `${check.message} (${bound})` };
    const desired = payload.desired;
    if (desired && other.installed && desired.sequence < other.installed.sequence) {
      return {
        problem: 'downgrade',
        message:
          `the signed manifest asks for ${payload.slug} ${desired.version} (sequence ${desired.sequence}) under application ${payload.application_id}, ` +
          `older than the ${other.installed.version} (sequence ${other.installed.sequence}) installed under ${owner} (${bound}): a downgrade refused`,
      };
    }
  }
  return null;
}

/** The key set the entry's rotations lead to from the pinned one (the last valid step), or null when none applies. */
function followRotations(payload: ManifestPayload, pinned: PinnedReleaseKeys): PinnedReleaseKeys | null {
  const rotations = [...(payload.release_key_rotations ?? [])].sort((a, b) => a.generation - b.generation);
  let current: PinnedReleaseKeys = pinned;
  let moved = false;
  for (const rotation of rotations) {
    if (rotationProblem(rotation, payload.slug, current.keys, current.generation) !== null) continue;
    current = { keys: sortedKeys(rotation.keys), generation: rotation.generation };
    moved = true;
  }
  return moved ? current : null;
}

/** `2 keys (u8ZB4n3G…, 9fQx2LmA…)`: short enough for a log line, enough to tell keys apart. */
const describeKeys = (keys: readonly string[]): string =>
  `${keys.length} key${keys.length === 1 ? '' : 's'} (${keys.map((k) => `${k.slice(0, 8)}…`).join(', ')})`;

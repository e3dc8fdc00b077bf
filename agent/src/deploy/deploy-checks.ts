import type { DeployAssignment, ManifestDesired, ManifestPayload } from '@drover/shared';
import type { InstalledRelease } from './deploy-state.js';
import type { ManifestCheck } from './manifest-check.js';

/**
 * The verified manifest entry of `applicationId` among checked entries, for an installation, or
 * why there is none (the message is for the job's error and the agent's log). The installed
 * release, unsigned by the pinned keys, is none: a device keeps it but never installs it again.
 */
export function entryFor(
  checks: readonly ManifestCheck[],
  applicationId: string,
): { ok: true; payload: ManifestPayload } | { ok: false; message: string } {
  const verified = checks.find((c) => c.ok && c.payload.application_id === applicationId);
  if (verified?.ok) return verified.installedUnsigned ? { ok: false, message: verified.installedUnsigned } : verified;
  const refused = checks.find((c) => !c.ok && c.applicationId === applicationId);
  if (refused && !refused.ok) return { ok: false, message: refused.message };
  const unattributed = checks.find((c) => !c.ok && c.applicationId === null);
  if (unattributed && !unattributed.ok) return { ok: false, message: unattributed.message };
  return {
    ok: false,
    message: `the signed manifest has no entry for application ${applicationId} (is this agent still bound to it?)`,
  };
}

/**
 * Why the deploy event does not match the signed manifest entry, or null when it does: the same
 * release id and checksum (docs/ota.md), the same update workflow, and an artifact the
 * coordinator describes with the signed checksum and size.
 */
export function eventMismatch(assignment: DeployAssignment, payload: ManifestPayload): string | null {
  const params = assignment.params;
  const desired = payload.desired;
  if (!desired) {
    return `the signed manifest names no release to install, but the deploy event asks for release ${params.release_id} (version ${params.version})`;
  }
  if (!same(desired.release_id, params.release_id)) {
    return `the deploy event asks for release ${params.release_id} (version ${params.version}) but the signed manifest names release ${desired.release_id} (version ${desired.version})`;
  }
  if (!same(desired.checksum_sha256, params.checksum_sha256)) {
    return `the deploy event's checksum ${params.checksum_sha256} differs from the signed manifest's ${desired.checksum_sha256}`;
  }
  if (assignment.workflowName !== payload.update_workflow) {
    return `the deploy event would run the workflow ${assignment.workflowName} but the signed manifest names ${payload.update_workflow}`;
  }
  const artifact = params.artifact;
  if (typeof artifact.sha256 === 'string' && !same(artifact.sha256, desired.checksum_sha256)) {
    return `the artifact file (SHA-256 ${artifact.sha256}) is not the one the signed release names (SHA-256 ${desired.checksum_sha256})`;
  }
  if (typeof artifact.size === 'number' && artifact.size !== desired.size) {
    return `the artifact file has ${artifact.size} bytes but the signed release names ${desired.size}`;
  }
  return null;
}

/** Whether the release this agent installed is the desired one (the same release id). */
export function runsDesired(current: InstalledRelease | null, desired: ManifestDesired | null): boolean {
  if (!current || !desired) return false;
  return same(current.releaseId, desired.release_id);
}

/** `1.4.2 (sequence 7)`. */
export const describeRelease = (r: { version: string; sequence: number }): string =>
  `${r.version} (sequence ${r.sequence})`;

/** Release ids (UUIDs) and hex checksums compare without regard to case. */
const same = (a: string, b: string): boolean => a.toLowerCase() === b.toLowerCase();

import { FILE_REF_TYPE, type DeployAssignment, type DeployParams, type JobAssignment } from '@drover/shared';

/**
 * The update job of a release (docs/ota.md, "Update jobs"): kind `update`, no trigger, the
 * application's update workflow, and the spec's deploy params with the artifact stored url-free
 * (a fresh `downloadUrl` is added at every send, like any input FileRef).
 */

export interface DeployableRelease {
  id: string;
  version: string;
  channel: string;
  sequence: number;
  checksumSha256: string;
  artifactFileId: string;
}

export function deployParams(release: DeployableRelease, forced: boolean): DeployParams {
  return {
    artifact: { __type: FILE_REF_TYPE, id: release.artifactFileId },
    release_id: release.id,
    version: release.version,
    channel: release.channel,
    sequence: release.sequence,
    forced,
    checksum_sha256: release.checksumSha256,
  };
}

/** The release an update job installs, read back from its stored params (null when they are not deploy params). */
export function releaseOfDeployParams(
  params: Record<string, unknown>,
): { id: string; version: string; sequence: number; forced: boolean } | null {
  const { release_id: id, version, sequence, forced } = params;
  if (typeof id !== 'string' || typeof version !== 'string' || typeof sequence !== 'number') return null;
  return { id, version, sequence, forced: forced === true };
}

/** The `deploy` event's data: the job's assignment with its application id, and its start's spread when there is one. */
export function toDeployAssignment(
  assignment: JobAssignment,
  applicationId: string,
  startWithinMs = 0,
): DeployAssignment {
  const deploy = { ...assignment, kind: 'update', applicationId } as DeployAssignment;
  if (startWithinMs > 0) deploy.startWithinMs = startWithinMs;
  return deploy;
}

import type { DeployReportRequest } from '@drover/shared';
import { validationFailed, type ValidationDetail } from '../../errors.js';
import type { Installation } from '../model/device-bindings.js';

/**
 * The installation an agent's report states (docs/ota.md, "Report"):
 * - none of `currentReleaseId`, `currentVersion`, `currentSequence`: undefined (unchanged);
 * - `currentReleaseId`: that release of the application (`release`, looked up by the caller;
 *   null when it is not one of the application's: 422), whose version and sequence win; a
 *   `currentVersion` or `currentSequence` sent with it must agree (else 422);
 * - only a version and/or a sequence: an installation the coordinator does not know by id
 *   (`releaseId` null, sequence 0 and version "" when not sent).
 */
export function reportedInstallation(
  report: Pick<DeployReportRequest, 'currentReleaseId' | 'currentVersion' | 'currentSequence'>,
  release: { id: string; version: string; sequence: number } | null,
): Installation | undefined {
  const { currentReleaseId, currentVersion, currentSequence } = report;
  if (currentReleaseId === undefined) {
    if (currentVersion === undefined && currentSequence === undefined) return undefined;
    return { releaseId: null, version: currentVersion ?? '', sequence: currentSequence ?? 0 };
  }
  if (!release) {
    throw validationFailed([
      { path: 'body.currentReleaseId', message: `no release \`${currentReleaseId}\` in this application` },
    ]);
  }
  const problems: ValidationDetail[] = [];
  if (currentVersion !== undefined && currentVersion !== release.version) {
    problems.push({
      path: 'body.currentVersion',
      message: `must be the version of release ${release.id} (\`${release.version}\`), got \`${currentVersion}\``,
    });
  }
  if (currentSequence !== undefined && currentSequence !== release.sequence) {
    problems.push({
      path: 'body.currentSequence',
      message: `must be the sequence of release ${release.id} (${release.sequence}), got ${currentSequence}`,
    });
  }
  if (problems.length > 0) throw validationFailed(problems);
  return { releaseId: release.id, version: release.version, sequence: release.sequence };
}

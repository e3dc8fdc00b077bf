import { describe, expect, it } from 'vitest';
import { AppError } from '../../../src/errors.js';
import { reportedInstallation } from '../../../src/domain/ota/report.js';

const release = { id: 'r7', version: '7.0', sequence: 7 };

function problemPaths(fn: () => unknown): string[] {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(AppError);
    return ((error as AppError).details as { path: string }[]).map((d) => d.path);
  }
  throw new Error('expected a 422');
}

describe('the installation a report states', () => {
  it('leaves the stored installation unchanged when the report names none', () => {
    expect(reportedInstallation({}, null)).toBeUndefined();
  });

  it('takes version and sequence from the named release', () => {
    expect(reportedInstallation({ currentReleaseId: 'r7' }, release)).toEqual({
      releaseId: 'r7',
      version: '7.0',
      sequence: 7,
    });
    expect(
      reportedInstallation({ currentReleaseId: 'r7', currentVersion: '7.0', currentSequence: 7 }, release),
    ).toEqual({ releaseId: 'r7', version: '7.0', sequence: 7 });
  });

  it('keeps a version reported without a release id as an installation unknown by id', () => {
    expect(reportedInstallation({ currentVersion: '0.9' }, null)).toEqual({
      releaseId: null,
      version: '0.9',
      sequence: 0,
    });
    expect(reportedInstallation({ currentSequence: 3 }, null)).toEqual({ releaseId: null, version: '', sequence: 3 });
  });

  it('refuses a release of another application and a version or sequence that disagree with it', () => {
    expect(problemPaths(() => reportedInstallation({ currentReleaseId: 'r9' }, null))).toEqual([
      'body.currentReleaseId',
    ]);
    expect(
      problemPaths(() =>
        reportedInstallation({ currentReleaseId: 'r7', currentVersion: '6', currentSequence: 6 }, release),
      ),
    ).toEqual(['body.currentVersion', 'body.currentSequence']);
  });
});

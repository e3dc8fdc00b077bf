import type { JobStatus } from '@drover/shared';
import type { Installation, JobEndOutcome } from '../model/device-bindings.js';

/**
 * What the end of an update job does to its binding (docs/ota.md, "Update jobs"): a success is
 * an observation of the new installation; a failure waits with backoff and, after
 * MAX_FAILED_ATTEMPTS in a row, stops until something new happens; a postponement holds that
 * release; a user's cancel holds the binding until a reconcile (or a publish, a yank, a channel
 * change, a new update workflow); a rejection or another cancellation is tried again shortly,
 * uncounted.
 */

export const MAX_FAILED_ATTEMPTS = 5;
const FIRST_RETRY_MS = 30_000;
const MAX_RETRY_MS = 3_600_000;
/** A job the agent rejected (queue full) or cancelled (shutdown) is issued again after this. */
export const REISSUE_DELAY_MS = 30_000;
/** The `errorMessage` prefix of a job the agent cancelled because its local policy postpones optional updates. */
export const POSTPONED_PREFIX = 'postponed';

/** The wait before the next attempt after `attempts` failed ones: 30 s × 4^(n−1), at most 1 h. */
export function retryDelayMs(attempts: number): number {
  const n = Math.max(1, Math.min(attempts, 20));
  return Math.min(MAX_RETRY_MS, FIRST_RETRY_MS * 4 ** (n - 1));
}

/** The binding fields the retry rules move. */
export interface RetryFields {
  current: Installation | null;
  failedAttempts: number;
  /** Unix ms, or null. */
  retryAt: number | null;
  postponedReleaseId: string | null;
  /** The update job a user cancelled: while set, no new job is issued (cleared by a reconcile and the like). */
  cancelledJobId: string | null;
}

/** What the coordinator knows of an ended update job. */
export interface EndedUpdateJob {
  id: string;
  status: JobStatus;
  /** A user asked to cancel it (docs/jobs.md, "Cancellation"). */
  cancelRequested: boolean;
  errorMessage: string | null;
  /** The release the job installs (from its params). */
  release: { id: string; version: string; sequence: number };
}

/** The binding after its active update job reached `job.status` (a terminal one). */
export function settleJobEnd(
  binding: RetryFields,
  job: EndedUpdateJob,
  now: number,
): { fields: RetryFields; outcome: JobEndOutcome } {
  switch (job.status) {
    case 'success':
      return {
        outcome: 'installed',
        fields: {
          current: { releaseId: job.release.id, version: job.release.version, sequence: job.release.sequence },
          failedAttempts: 0,
          retryAt: null,
          postponedReleaseId: null,
          cancelledJobId: null,
        },
      };
    case 'failed':
    case 'timed_out': {
      const failedAttempts = binding.failedAttempts + 1;
      return {
        outcome: 'failed',
        fields: { ...binding, failedAttempts, retryAt: now + retryDelayMs(failedAttempts) },
      };
    }
    case 'cancelled':
      // A user cancelled it: the binding holds (no retry) until someone asks for a new attempt.
      if (job.cancelRequested)
        return { outcome: 'cancelled', fields: { ...binding, retryAt: null, cancelledJobId: job.id } };
      if (job.errorMessage?.startsWith(POSTPONED_PREFIX)) {
        return { outcome: 'postponed', fields: { ...binding, retryAt: null, postponedReleaseId: job.release.id } };
      }
      return { outcome: 'reissue', fields: { ...binding, retryAt: now + REISSUE_DELAY_MS } };
    default:
      // rejected (the agent's queue was full, or it refused the job): not counted.
      return { outcome: 'reissue', fields: { ...binding, retryAt: now + REISSUE_DELAY_MS } };
  }
}

import { describe, expect, it } from 'vitest';
import { cancelState } from '../../dashboard/src/components/cancel-words.js';
import { CANCEL_UNCONFIRMED_MESSAGE } from '../../coordinator/src/domain/jobs/job-state.js';

/** The words under a job's buttons about its cancel (the job page, docs/dashboard.md). */
describe('cancelState', () => {
  const at = '2026-12-01T10:00:00.000Z';
  const job = { status: 'cancelled', cancelRequestedAt: at, startedAt: at, errorMessage: null } as const;

  it('says nothing of a job nobody cancelled, and follows one that was', () => {
    expect(cancelState({ ...job, cancelRequestedAt: null })).toBeNull();
    expect(cancelState({ ...job, status: 'running' })).toMatch(/^Cancel requested: the agent is stopping the job/);
    expect(cancelState({ ...job, status: 'timed_out' })).toBe('The job ended timed out before it could be stopped.');
    expect(cancelState({ ...job, startedAt: null })).toBe('Cancelled: the job had not started.');
    const stopped = { ...job, errorMessage: 'cancelled: a user cancelled the job; step 1 (build) was stopped' };
    expect(cancelState(stopped)).toBe('Cancelled: its agent stopped the job.');
  });

  it('does not say the agent stopped a job the coordinator ended because its agent never confirmed the cancel', () => {
    const swept = cancelState({ ...job, errorMessage: CANCEL_UNCONFIRMED_MESSAGE });
    expect(swept).toBe(
      "Cancelled without word from its agent: it did not confirm that it stopped the job by the cancel's deadline.",
    );
  });
});

import { describe, expect, it } from 'vitest';
import type { ReleaseFacts } from '../../../src/domain/model/releases.js';
import {
  planEvaluation,
  NEEDLESS_MESSAGE,
  SUPERSEDED_MESSAGE,
  WORKFLOW_CHANGED_MESSAGE,
  type ActiveJobFacts,
  type BindingFacts,
  type EvaluationInput,
} from '../../../src/domain/ota/evaluation.js';
import { MAX_FAILED_ATTEMPTS, REISSUE_DELAY_MS, retryDelayMs } from '../../../src/domain/ota/retry-policy.js';

const NOW = 1_700_000_000_000;
const r1: ReleaseFacts = {
  id: 'r1',
  version: '1.0',
  sequence: 1,
  channel: 'stable',
  status: 'published',
  updatePolicy: 'optional',
};
const r2: ReleaseFacts = { ...r1, id: 'r2', version: '2.0', sequence: 2 };
const on = (r: ReleaseFacts) => ({ releaseId: r.id, version: r.version, sequence: r.sequence });

const binding = (extra: Partial<BindingFacts> = {}): BindingFacts => ({
  channel: 'stable',
  current: on(r1),
  activeJobId: null,
  failedAttempts: 0,
  retryAt: null,
  postponedReleaseId: null,
  cancelledJobId: null,
  ...extra,
});
const job = (status: ActiveJobFacts['status'], extra: Partial<ActiveJobFacts> = {}): ActiveJobFacts => ({
  id: 'job-1',
  status,
  cancelRequested: false,
  errorMessage: null,
  release: { id: r2.id, version: r2.version, sequence: r2.sequence },
  forced: false,
  workflowName: 'apply-update',
  ...extra,
});

function plan(extra: Partial<EvaluationInput<ReleaseFacts>> = {}) {
  return planEvaluation<ReleaseFacts>({
    binding: binding(),
    releases: [r1, r2],
    activeJob: null,
    updateWorkflowName: 'apply-update',
    agentRevoked: false,
    reason: 'publish',
    now: NOW,
    ...extra,
  });
}

describe('evaluation of a binding', () => {
  it('issues an update job when the desired release differs from the current one', () => {
    const p = plan();
    expect(p.issue).toBe(r2);
    expect(p.hold).toBeNull();
  });

  it('issues nothing when the device already runs the desired release, or there is none', () => {
    expect(plan({ binding: binding({ current: on(r2) }) }).hold).toBe('up_to_date');
    expect(plan({ releases: [{ ...r1, status: 'draft' }] }).hold).toBe('no_release');
  });

  it('never issues a second job while one is in progress, and re-pushes a pending one on a report', () => {
    const running = plan({ binding: binding({ activeJobId: 'job-1' }), activeJob: job('running') });
    expect([running.issue, running.repush, running.hold]).toEqual([null, null, 'job_in_progress']);
    const pending = plan({ binding: binding({ activeJobId: 'job-1' }), activeJob: job('pending'), reason: 'report' });
    expect([pending.issue, pending.repush]).toEqual([null, 'job-1']);
    expect(pending.binding.activeJobId).toBe('job-1');
  });

  it('replaces a pending job whose release is no longer desired, and keeps a running one', () => {
    const yanked = [r1, { ...r2, status: 'yanked' as const }];
    const device = binding({ current: null, activeJobId: 'job-1' });
    const pending = plan({ binding: device, releases: yanked, activeJob: job('pending'), reason: 'yank' });
    expect(pending.supersede).toEqual({ jobId: 'job-1', message: SUPERSEDED_MESSAGE });
    expect(pending.issue).toBe(yanked[0]);
    const running = plan({ binding: device, releases: yanked, activeJob: job('queued'), reason: 'yank' });
    expect([running.supersede, running.issue, running.hold]).toEqual([null, null, 'job_in_progress']);
  });

  it('drops a pending job for a release the device reports installed, and keeps a running one', () => {
    const device = binding({ current: on(r2), activeJobId: 'job-1' });
    const pending = plan({ binding: device, activeJob: job('pending'), reason: 'report' });
    expect(pending.supersede).toEqual({ jobId: 'job-1', message: NEEDLESS_MESSAGE });
    expect([pending.issue, pending.repush, pending.hold]).toEqual([null, null, 'up_to_date']);
    expect(pending.binding.activeJobId).toBeNull();
    const running = plan({ binding: device, activeJob: job('running'), reason: 'report' });
    expect([running.supersede, running.hold]).toEqual([null, 'job_in_progress']);
  });

  it("replaces a pending job when the application's update workflow changed, and keeps a running one", () => {
    const device = binding({ activeJobId: 'job-1' });
    const renamed = { binding: device, updateWorkflowName: 'install-v2', reason: 'workflow' as const };
    const pending = plan({ ...renamed, activeJob: job('pending') });
    expect(pending.supersede).toEqual({ jobId: 'job-1', message: WORKFLOW_CHANGED_MESSAGE });
    expect(pending.issue).toBe(r2);
    const running = plan({ ...renamed, activeJob: job('running') });
    expect([running.supersede, running.issue, running.hold]).toEqual([null, null, 'job_in_progress']);
  });

  it('gives no job to a revoked agent', () => {
    expect(plan({ agentRevoked: true }).hold).toBe('agent_revoked');
  });

  it('takes a successful job as the new current installation', () => {
    const p = plan({ binding: binding({ activeJobId: 'job-1', failedAttempts: 2 }), activeJob: job('success') });
    expect(p.settled).toBe('installed');
    expect(p.binding).toMatchObject({ current: on(r2), failedAttempts: 0, activeJobId: null });
    expect(p.hold).toBe('up_to_date');
  });

  it('retries a failed job with backoff: 30 s, ×4 each time, at most an hour', () => {
    expect([1, 2, 3, 4, 5, 6].map(retryDelayMs)).toEqual([30_000, 120_000, 480_000, 1_920_000, 3_600_000, 3_600_000]);
    const failed = plan({ binding: binding({ activeJobId: 'job-1' }), activeJob: job('failed'), reason: 'job_end' });
    expect(failed.settled).toBe('failed');
    expect(failed.binding).toMatchObject({ failedAttempts: 1, retryAt: NOW + 30_000, activeJobId: null });
    expect([failed.issue, failed.hold]).toEqual([null, 'retry_later']);
    const due = plan({ binding: failed.binding, reason: 'sweep', now: NOW + 30_000 });
    expect(due.issue).toBe(r2);
    expect(due.binding.retryAt).toBeNull();
  });

  it('counts a timed out job as a failure', () => {
    const p = plan({
      binding: binding({ activeJobId: 'job-1', failedAttempts: 1 }),
      activeJob: job('timed_out'),
      reason: 'job_end',
    });
    expect(p.binding).toMatchObject({ failedAttempts: 2, retryAt: NOW + 120_000 });
  });

  it('stops retrying after the last allowed failure until a publish, a reconcile or a report', () => {
    const p = plan({
      binding: binding({ activeJobId: 'job-1', failedAttempts: MAX_FAILED_ATTEMPTS - 1 }),
      activeJob: job('failed'),
      reason: 'job_end',
    });
    const stuck = plan({ binding: p.binding, reason: 'sweep', now: NOW + 10 * 3_600_000 });
    expect(stuck.hold).toBe('too_many_failures');
    expect(stuck.binding.retryAt).toBeNull();
    expect(plan({ binding: stuck.binding, reason: 'reconcile' }).issue).toBe(r2);
    expect(plan({ binding: stuck.binding, reason: 'publish' }).issue).toBe(r2);
    expect(plan({ binding: stuck.binding, reason: 'report', reportedState: 'idle' }).issue).toBe(r2);
    expect(plan({ binding: stuck.binding, reason: 'report', reportedState: 'failed' }).hold).toBe('too_many_failures');
  });

  it('does not count a failure reported while the job is still in progress', () => {
    const p = plan({
      binding: binding({ activeJobId: 'job-1', failedAttempts: 3 }),
      activeJob: job('running'),
      reason: 'report',
      reportedState: 'idle',
    });
    expect(p.binding.failedAttempts).toBe(3);
  });

  it('holds a postponed optional release until a newer release, a reconcile or another report', () => {
    const p = plan({
      binding: binding({ activeJobId: 'job-1' }),
      activeJob: job('cancelled', { errorMessage: 'postponed by local policy' }),
      reason: 'job_end',
    });
    expect(p.settled).toBe('postponed');
    expect([p.binding.postponedReleaseId, p.hold]).toEqual(['r2', 'postponed']);
    expect(plan({ binding: p.binding, reason: 'sweep' }).hold).toBe('postponed');
    expect(plan({ binding: p.binding, reason: 'report', reportedState: 'postponed' }).hold).toBe('postponed');
    expect(plan({ binding: p.binding, reason: 'report', reportedState: 'idle' }).issue).toBe(r2);
    expect(plan({ binding: p.binding, reason: 'reconcile' }).issue).toBe(r2);
    const r3 = { ...r2, id: 'r3', sequence: 3 };
    expect(plan({ binding: p.binding, releases: [r1, r2, r3] }).issue).toBe(r3);
  });

  it('does not let a postponement hold back a forced update', () => {
    const mandatory = { ...r2, updatePolicy: 'mandatory' as const };
    const p = plan({ binding: binding({ postponedReleaseId: 'r2' }), releases: [r1, mandatory], reason: 'sweep' });
    expect(p.issue).toBe(mandatory);
    expect(p.state.forced).toBe(true);
  });

  it('records a postponed report as a postponement of the desired release', () => {
    const p = plan({ reason: 'report', reportedState: 'postponed' });
    expect([p.binding.postponedReleaseId, p.hold]).toEqual(['r2', 'postponed']);
  });

  it('re-issues a rejected or cancelled job after a short delay, without counting it', () => {
    for (const status of ['rejected', 'cancelled'] as const) {
      const p = plan({ binding: binding({ activeJobId: 'job-1' }), activeJob: job(status), reason: 'job_end' });
      expect(p.settled).toBe('reissue');
      expect(p.binding).toMatchObject({ failedAttempts: 0, retryAt: NOW + REISSUE_DELAY_MS });
      expect(plan({ binding: p.binding, reason: 'sweep', now: NOW + REISSUE_DELAY_MS }).issue).toBe(r2);
    }
  });

  it('holds a binding whose update job a user cancelled, forced or not, until a reconcile, a publish or a channel change', () => {
    const mandatory = { ...r2, updatePolicy: 'mandatory' as const };
    const p = plan({
      binding: binding({ activeJobId: 'job-1' }),
      releases: [r1, mandatory],
      activeJob: job('cancelled', { cancelRequested: true }),
      reason: 'job_end',
    });
    expect(p.settled).toBe('cancelled');
    expect(p.binding).toMatchObject({ activeJobId: null, cancelledJobId: 'job-1', retryAt: null });
    expect([p.issue, p.hold]).toEqual([null, 'cancelled']);
    const later = { binding: p.binding, releases: [r1, mandatory], now: NOW + 10 * REISSUE_DELAY_MS };
    expect(plan({ ...later, reason: 'sweep' }).hold).toBe('cancelled');
    for (const reportedState of ['idle', 'failed'] as const) {
      expect(plan({ ...later, reason: 'report', reportedState }).hold).toBe('cancelled');
    }
    for (const reason of ['reconcile', 'publish', 'channel'] as const) {
      const next = plan({ ...later, reason });
      expect(next.issue).toBe(mandatory);
      expect(next.binding.cancelledJobId).toBeNull();
    }
  });

  it('takes the result of an update job the agent finished before the cancel reached it as usual', () => {
    const p = plan({
      binding: binding({ activeJobId: 'job-1' }),
      activeJob: job('success', { cancelRequested: true }),
      reason: 'job_end',
    });
    expect(p.settled).toBe('installed');
    expect(p.binding).toMatchObject({ current: on(r2), cancelledJobId: null });
  });

  it('forgets an active job id that names no job', () => {
    const p = plan({ binding: binding({ activeJobId: 'gone' }), activeJob: null });
    expect(p.issue).toBe(r2);
  });
});

import { describe, expect, it } from 'vitest';
import type { ReleaseFacts } from '../../../src/domain/model/releases.js';
import {
  planEvaluation,
  NEEDLESS_MESSAGE,
  SUPERSEDED_MESSAGE,
  WINDOW_CLOSED_MESSAGE,
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
  windowOpensAt: null,
  windowClosesAt: null,
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
    maintenanceWindow: null,
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

describe('evaluation of a binding with a maintenance window', () => {
  // NOW is 2023-11-14T22:13:20Z. A window at 23:00 UTC for an hour is closed at NOW and opens in 46 min 40 s.
  const OPENS = Date.parse('2023-11-14T23:00:00.000Z');
  const CLOSES = OPENS + 3_600_000;
  const maintenanceWindow = { cron: '0 23 * * *', timezone: 'UTC', durationMinutes: 60 };
  const inside = OPENS + 600_000;
  const mandatory = { ...r2, updatePolicy: 'mandatory' as const };
  const withWindow = (extra: Partial<EvaluationInput<ReleaseFacts>> = {}) => plan({ maintenanceWindow, ...extra });

  it('holds an optional update outside the window, remembering when the window opens', () => {
    const p = withWindow();
    expect([p.issue, p.hold]).toEqual([null, 'maintenance_window']);
    expect(p.binding).toMatchObject({ windowOpensAt: OPENS, windowClosesAt: null, retryAt: null });
  });

  it('issues it when the window has opened (the sweep comes then), remembering when the window closes', () => {
    const held = withWindow().binding;
    const p = withWindow({ binding: held, reason: 'sweep', now: OPENS });
    expect([p.issue, p.hold]).toEqual([r2, null]);
    expect(p.binding).toMatchObject({ windowOpensAt: null, windowClosesAt: CLOSES });
  });

  it('issues a mandatory or a forced update at once, whatever the window', () => {
    // The desired release is mandatory: at once, even when the device is not below it (a newer release of another channel).
    const beta = { ...r1, id: 'b3', sequence: 3, channel: 'beta' };
    const notForced = withWindow({ binding: binding({ current: on(beta) }), releases: [r1, mandatory, beta] });
    expect([notForced.state.forced, notForced.issue, notForced.hold]).toEqual([false, mandatory, null]);
    expect(notForced.binding).toMatchObject({ windowOpensAt: null, windowClosesAt: null });
    // Forced: the installed release was yanked, the desired one is optional.
    const forced = withWindow({ releases: [{ ...r1, status: 'yanked' }, r2] });
    expect([forced.state.forced, forced.issue]).toEqual([true, r2]);
  });

  it('withdraws a pending optional job when the window is closed, and waits for the next one', () => {
    const p = withWindow({ binding: binding({ activeJobId: 'job-1' }), activeJob: job('pending'), reason: 'sweep' });
    expect(p.supersede).toEqual({ jobId: 'job-1', message: WINDOW_CLOSED_MESSAGE });
    expect([p.issue, p.hold]).toEqual([null, 'maintenance_window']);
    expect(p.binding).toMatchObject({ activeJobId: null, windowOpensAt: OPENS });
  });

  it('keeps a pending optional job inside the window, and comes back when the window closes', () => {
    const p = withWindow({
      binding: binding({ activeJobId: 'job-1' }),
      activeJob: job('pending'),
      reason: 'report',
      now: inside,
    });
    expect([p.supersede, p.hold, p.repush]).toEqual([null, 'job_in_progress', 'job-1']);
    expect(p.binding).toMatchObject({ activeJobId: 'job-1', windowClosesAt: CLOSES, windowOpensAt: null });
  });

  it('lets a job the agent took run on past the end of the window', () => {
    for (const status of ['queued', 'running'] as const) {
      const p = withWindow({
        binding: binding({ activeJobId: 'job-1', windowClosesAt: CLOSES }),
        activeJob: job(status),
      });
      expect([p.supersede, p.hold]).toEqual([null, 'job_in_progress']);
      expect(p.binding).toMatchObject({ activeJobId: 'job-1', windowClosesAt: null });
    }
  });

  it('keeps a pending forced job when the window is closed', () => {
    const p = withWindow({
      binding: binding({ activeJobId: 'job-1' }),
      releases: [r1, mandatory],
      activeJob: job('pending', { forced: true }),
      reason: 'sweep',
    });
    expect([p.supersede, p.hold]).toEqual([null, 'job_in_progress']);
  });

  it('lets the other holds and a retry wait come first, and forgets the window once it no longer applies', () => {
    const postponed = withWindow({ binding: binding({ postponedReleaseId: 'r2' }), reason: 'sweep' });
    expect([postponed.hold, postponed.binding.windowOpensAt]).toEqual(['postponed', null]);
    const retry = withWindow({ binding: binding({ retryAt: NOW + 1_000 }), reason: 'sweep' });
    expect([retry.hold, retry.binding.windowOpensAt]).toEqual(['retry_later', null]);
    // The window removed: the held update starts at once.
    const held = withWindow().binding;
    const removed = plan({ binding: held, reason: 'window' });
    expect([removed.issue, removed.binding.windowOpensAt]).toEqual([r2, null]);
    // Up to date: nothing to wait for.
    expect(
      withWindow({ binding: binding({ current: on(r2), windowOpensAt: OPENS }) }).binding.windowOpensAt,
    ).toBeNull();
  });
});

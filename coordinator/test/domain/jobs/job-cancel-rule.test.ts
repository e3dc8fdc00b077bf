import { describe, expect, it } from 'vitest';
import { JOB_STATUSES, type JobStatus } from '@drover/shared';
import { CANCELLED_MESSAGE, planCancel, planJobMove } from '../../../src/domain/jobs/job-state.js';
import type { FinishReport, Job, JobMove } from '../../../src/domain/model/jobs.js';

const AT = '2026-01-02T03:00:10.000Z';
const CONFIRM_BY = '2026-01-02T03:01:20.000Z';

function job(status: JobStatus, fields: Partial<Job> = {}): Job {
  return {
    id: 'j1',
    orgId: 'o1',
    kind: 'trigger',
    source: 'webhook',
    triggerId: 't1',
    agentId: 'a1',
    batchId: null,
    held: false,
    workflowId: null,
    workflowName: 'deploy',
    status,
    ref: null,
    debug: false,
    params: {},
    output: null,
    exitCode: null,
    errorMessage: null,
    forced: false,
    forceReason: null,
    apiTokenId: null,
    userId: null,
    timeoutMs: 600_000,
    createdAt: '2026-01-02T03:00:00.000Z',
    queuedAt: null,
    startedAt: null,
    finishedAt: null,
    deadlineAt: null,
    cancelRequestedAt: null,
    cancelAckedAt: null,
    seq: 1,
    number: 1,
    chatOrigin: null,
    ...fields,
  };
}

const result: FinishReport = { status: 'success', exitCode: 0, errorMessage: null, output: {} };
const report = (move: 'accept' | 'start' | 'reject' | 'finish'): JobMove => {
  const base = { agentId: 'a1', jobId: 'j1', at: AT };
  switch (move) {
    case 'accept':
    case 'start':
      return { ...base, move, deadlineGraceMs: 1_000 };
    case 'reject':
      return { ...base, move, errorMessage: 'queue full' };
    case 'finish':
      return { ...base, move, report: result };
  }
};

describe('the cancel rule', () => {
  it('cancels a job that has not started at once, refuses a finished one, and asks the agent to stop a running one', () => {
    const decisions = Object.fromEntries(
      JOB_STATUSES.map((s) => [s, planCancel(job(s, { deadlineAt: null }), AT, CONFIRM_BY).decision]),
    );
    expect(decisions).toEqual({
      pending: 'apply',
      queued: 'apply',
      running: 'apply',
      success: 'conflict',
      failed: 'conflict',
      timed_out: 'conflict',
      cancelled: 'conflict',
      rejected: 'conflict',
    });
    expect(planCancel(job('queued'), AT, CONFIRM_BY)).toEqual({
      decision: 'apply',
      change: { status: 'cancelled', cancel: 'now', errorMessage: CANCELLED_MESSAGE, at: AT },
    });
  });

  it("brings a running job's deadline forward to the confirm-by instant, never later than it was", () => {
    const far = planCancel(job('running', { deadlineAt: '2026-01-02T04:00:00.000Z' }), AT, CONFIRM_BY);
    expect(far).toEqual({
      decision: 'apply',
      change: { status: 'running', cancel: 'requested', at: AT, deadlineAt: CONFIRM_BY },
    });
    const none = planCancel(job('running', { deadlineAt: null }), AT, CONFIRM_BY);
    expect(none.decision === 'apply' && none.change).toMatchObject({ deadlineAt: CONFIRM_BY });
    const near = planCancel(job('running', { deadlineAt: '2026-01-02T03:00:30.000Z' }), AT, CONFIRM_BY);
    expect(near.decision === 'apply' && near.change).toMatchObject({ deadlineAt: '2026-01-02T03:00:30.000Z' });
  });

  it('answers a second cancel of a running job as unchanged', () => {
    expect(planCancel(job('running', { cancelRequestedAt: AT }), AT, CONFIRM_BY)).toEqual({ decision: 'unchanged' });
  });

  it("refuses the agent's accept and start of a job cancelled before it ran, and takes its refusal or result as a repeat", () => {
    const cancelled = job('cancelled', { cancelRequestedAt: AT, errorMessage: CANCELLED_MESSAGE });
    expect(planJobMove(cancelled, report('accept'))).toMatchObject({ decision: 'conflict' });
    expect(planJobMove(cancelled, report('start'))).toMatchObject({ decision: 'conflict' });
    expect(planJobMove(cancelled, report('reject'))).toMatchObject({ decision: 'unchanged' });
    expect(planJobMove(cancelled, report('finish'))).toMatchObject({ decision: 'unchanged' });
    // A job cancelled by something else (an update job superseded) keeps the ordinary rules.
    expect(planJobMove(job('cancelled', { errorMessage: 'superseded' }), report('finish'))).toEqual({
      decision: 'conflict',
    });
  });

  it("applies the agent's result of a running job being cancelled, whatever it is: the first to commit wins", () => {
    const stopping = job('running', { cancelRequestedAt: AT });
    expect(planJobMove(stopping, report('finish'))).toMatchObject({
      decision: 'apply',
      change: { status: 'success' },
      confirmsCancel: true,
    });
  });

  it("counts the agent's first report about an ended job as the confirmation of its cancel", () => {
    const cancelled = job('cancelled', { cancelRequestedAt: AT });
    for (const move of ['accept', 'start', 'reject', 'finish'] as const) {
      expect(planJobMove(cancelled, report(move)).confirmsCancel).toBe(true);
    }
    expect(planJobMove({ ...cancelled, cancelAckedAt: AT }, report('finish')).confirmsCancel).toBeUndefined();
    // A running job being cancelled is confirmed by its end, not by a repeated start.
    expect(planJobMove(job('running', { cancelRequestedAt: AT }), report('start')).confirmsCancel).toBeUndefined();
    expect(planJobMove(job('running'), report('finish')).confirmsCancel).toBeUndefined();
  });
});

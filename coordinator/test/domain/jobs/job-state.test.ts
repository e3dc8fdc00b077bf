import { describe, expect, it } from 'vitest';
import { JOB_STATUSES, type JobStatus } from '@drover/shared';
import {
  canonicalJson,
  deadlineAt,
  decide,
  decideFinish,
  finishInstant,
  rejectMessage,
  type JobResult,
} from '../../../src/domain/jobs/job-state.js';
import { isOpenJobStatus } from '../../../src/domain/model/jobs.js';

const table = (transition: 'accept' | 'reject' | 'start') =>
  Object.fromEntries(JOB_STATUSES.map((s) => [s, decide(transition, s)]));

describe('job state machine', () => {
  it('accepts only a pending job; a queued or running one was already accepted', () => {
    expect(table('accept')).toEqual({
      pending: 'apply',
      queued: 'unchanged',
      running: 'unchanged',
      success: 'conflict',
      failed: 'conflict',
      timed_out: 'conflict',
      cancelled: 'conflict',
      rejected: 'conflict',
    });
  });

  it('rejects only a pending job; a rejected one repeats harmlessly', () => {
    expect(table('reject')).toEqual({
      pending: 'apply',
      queued: 'conflict',
      running: 'conflict',
      success: 'conflict',
      failed: 'conflict',
      timed_out: 'conflict',
      cancelled: 'conflict',
      rejected: 'unchanged',
    });
  });

  it('starts a pending or queued job; a running one was already started', () => {
    expect(table('start')).toEqual({
      pending: 'apply',
      queued: 'apply',
      running: 'unchanged',
      success: 'conflict',
      failed: 'conflict',
      timed_out: 'conflict',
      cancelled: 'conflict',
      rejected: 'conflict',
    });
  });

  const result: JobResult = {
    status: 'failed',
    exitCode: 3,
    errorMessage: 'step 1 exited with code 3',
    output: { a: 1, b: [1, { c: 2 }] },
  };
  const recorded = (status: JobStatus, r: Partial<JobResult> = {}) => ({ ...result, ...r, status });

  it('finishes any open job', () => {
    for (const s of ['pending', 'queued', 'running'] as const) {
      expect(decideFinish({ status: s, exitCode: null, errorMessage: null, output: null }, result)).toBe('apply');
    }
  });

  it('answers the same result again as unchanged, whatever the key order of its output', () => {
    expect(decideFinish(recorded('failed', { output: { b: [1, { c: 2 }], a: 1 } }), result)).toBe('unchanged');
  });

  it('refuses a different result on a finished job: the first terminal status stays', () => {
    expect(decideFinish(recorded('success'), result)).toBe('conflict');
    expect(decideFinish(recorded('failed', { exitCode: 4 }), result)).toBe('conflict');
    expect(decideFinish(recorded('failed', { errorMessage: 'other' }), result)).toBe('conflict');
    expect(decideFinish(recorded('failed', { output: { a: 2, b: [1, { c: 2 }] } }), result)).toBe('conflict');
    expect(decideFinish({ ...recorded('rejected'), output: null }, result)).toBe('conflict');
  });

  it('treats a missing stored output as an empty one', () => {
    expect(
      decideFinish(
        { status: 'success', exitCode: 0, errorMessage: null, output: null },
        {
          status: 'success',
          exitCode: 0,
          errorMessage: null,
          output: {},
        },
      ),
    ).toBe('unchanged');
  });

  it('knows the open statuses', () => {
    expect(JOB_STATUSES.filter(isOpenJobStatus)).toEqual(['pending', 'queued', 'running']);
  });
});

describe('job deadlines and instants', () => {
  it('puts the deadline at the start plus the timeout plus the grace', () => {
    expect(deadlineAt('2026-01-01T00:00:00.000Z', 90_000, 60_000)).toBe('2026-01-01T00:02:30.000Z');
  });

  it('gives a job without a timeout no deadline', () => {
    expect(deadlineAt('2026-01-01T00:00:00.000Z', null, 60_000)).toBeNull();
  });

  it("uses the agent's finish instant between the job's start and now only, else now", () => {
    const started = '2026-01-01T00:00:00.000Z';
    const now = '2026-01-01T01:00:00.000Z';
    expect(finishInstant(undefined, started, now)).toBe(now);
    expect(finishInstant('2026-01-01T00:30:00.000Z', started, now)).toBe('2026-01-01T00:30:00.000Z');
    expect(finishInstant(started, started, now)).toBe(started);
    // Never before it started (nor stuck at that instant, which would read as a job that took no time).
    expect(finishInstant('2025-12-31T23:59:59.999Z', started, now)).toBe(now);
    const created = started;
    expect(finishInstant('2027-01-01T00:00:00.000Z', created, now)).toBe(now);
    expect(finishInstant('not a date', created, now)).toBe(now);
  });
});

describe('job messages and canonical JSON', () => {
  it("words the rejection reason and appends the agent's message", () => {
    expect(rejectMessage('queue_full', undefined)).toBe("the agent's job queue is full");
    expect(rejectMessage('unknown_workflow', '  ')).toBe('the agent does not know this workflow');
    expect(rejectMessage('queue_full', 'capacity 4')).toBe("the agent's job queue is full: capacity 4");
  });

  it('sorts object keys at every depth and keeps array order', () => {
    expect(canonicalJson({ b: 1, a: { d: [2, 1], c: null } })).toBe('{"a":{"c":null,"d":[2,1]},"b":1}');
  });
});

import { TERMINAL_JOB_STATUSES, type TerminalJobStatus } from '@drover/shared';
import { describe, expect, it } from 'vitest';
import { notifyOnMatches, planJobNotification } from '../../../../src/domain/chat/notifications/plan.js';
import type { NotifySettings } from '../../../../src/domain/model/chat-outbox.js';
import type { Job } from '../../../../src/domain/model/jobs.js';
import { NOTIFY_ON } from '../../../../src/domain/model/triggers.js';

const job = (extra: Partial<Job> = {}): Job => ({
  id: 'job-1',
  orgId: 'org-1',
  kind: 'trigger',
  source: 'webhook',
  triggerId: 'trigger-1',
  agentId: 'agent-1',
  workflowId: 'wf-1',
  workflowName: 'build',
  status: 'success',
  ref: 'main',
  debug: false,
  params: { secretish: 'never in the message' },
  output: { version: '1.2' },
  exitCode: 0,
  errorMessage: null,
  forced: false,
  forceReason: null,
  apiTokenId: null,
  userId: null,
  timeoutMs: null,
  createdAt: '2026-03-01T09:59:59.000Z',
  queuedAt: '2026-03-01T10:00:00.000Z',
  startedAt: '2026-03-01T10:00:00.000Z',
  finishedAt: '2026-03-01T10:00:30.000Z',
  deadlineAt: null,
  cancelRequestedAt: null,
  cancelAckedAt: null,
  seq: 7,
  number: 7,
  chatOrigin: null,
  ...extra,
});

const settings = (extra: Partial<NotifySettings> = {}): NotifySettings => ({
  triggerName: 'nightly',
  notifyProvider: 'slack',
  notifyTeamId: 'T1',
  notifyChannelId: 'C1',
  notifyOn: 'always',
  ...extra,
});

describe('notifyOnMatches', () => {
  it('posts failures for failure, successes for success, everything for always, nothing for none; cancelled only for always', () => {
    const table = Object.fromEntries(
      NOTIFY_ON.map((on) => [on, TERMINAL_JOB_STATUSES.filter((s: TerminalJobStatus) => notifyOnMatches(on, s))]),
    );
    expect(table).toEqual({
      always: ['success', 'failed', 'timed_out', 'cancelled', 'rejected'],
      failure: ['failed', 'timed_out', 'rejected'],
      success: ['success'],
      none: [],
    });
  });
});

describe('planJobNotification', () => {
  it("writes the job's outcome for the trigger's channel, keyed by the job so it is enqueued once", () => {
    expect(planJobNotification(job(), settings(), '2026-03-01T10:00:31.000Z')).toEqual({
      orgId: 'org-1',
      dedupeKey: 'job:job-1:outcome',
      jobId: 'job-1',
      provider: 'slack',
      target: { type: 'channel', teamId: 'T1', channelId: 'C1' },
      payload: {
        kind: 'job_outcome',
        jobId: 'job-1',
        number: 7,
        triggerName: 'nightly',
        workflowName: 'build',
        status: 'success',
        ref: 'main',
        startedAt: '2026-03-01T10:00:00.000Z',
        finishedAt: '2026-03-01T10:00:30.000Z',
        exitCode: 0,
        errorMessage: null,
        output: { version: '1.2' },
      },
      createdAt: '2026-03-01T10:00:31.000Z',
    });
  });

  it('posts nothing for an outcome notifyOn does not cover, an open job or an update job', () => {
    const at = '2026-03-01T10:00:31.000Z';
    expect(planJobNotification(job(), settings({ notifyOn: 'failure' }), at)).toBeNull();
    expect(planJobNotification(job({ status: 'running' }), settings(), at)).toBeNull();
    expect(planJobNotification(job({ kind: 'update', triggerId: null }), settings(), at)).toBeNull();
    expect(planJobNotification(job({ status: 'timed_out' }), settings({ notifyOn: 'failure' }), at)).not.toBeNull();
  });
});

import { TERMINAL_JOB_STATUSES, type TerminalJobStatus } from '@drover/shared';
import { describe, expect, it } from 'vitest';
import { notifyOnMatches, planJobMessages } from '../../../../src/domain/chat/notifications/plan.js';
import type { NotifySettings } from '../../../../src/domain/model/chat-outbox.js';
import type { ChatOrigin } from '../../../../src/domain/model/jobs.js';
import type { Job } from '../../../../src/domain/model/jobs.js';
import { NOTIFY_ON } from '../../../../src/domain/model/triggers.js';

const job = (extra: Partial<Job> = {}): Job => ({
  id: 'job-1',
  orgId: 'org-1',
  kind: 'trigger',
  source: 'webhook',
  triggerId: 'trigger-1',
  agentId: 'agent-1',
  batchId: null,
  held: false,
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

const AT = '2026-03-01T10:00:31.000Z';
const plan = (j: Job, notify: NotifySettings | null, atAdmission = false) =>
  planJobMessages({ job: j, triggerName: 'nightly', notify, atAdmission }, AT);
const origin = (extra: Partial<ChatOrigin> = {}): ChatOrigin => ({
  provider: 'slack',
  teamId: 'T1',
  channelId: 'C0CHAT',
  userId: 'U0ADA',
  userName: 'ada',
  ...extra,
});

describe('planJobMessages', () => {
  it("writes the job's outcome for the trigger's channel, keyed by the job so it is enqueued once", () => {
    expect(plan(job(), settings())).toEqual([
      {
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
        createdAt: AT,
      },
    ]);
  });

  it('posts nothing for an outcome notifyOn does not cover, an open job, an update job or a trigger without settings', () => {
    expect(plan(job(), settings({ notifyOn: 'failure' }))).toEqual([]);
    expect(plan(job({ status: 'running' }), settings())).toEqual([]);
    expect(plan(job({ kind: 'update', triggerId: null }), settings())).toEqual([]);
    expect(plan(job(), null)).toEqual([]);
    expect(plan(job({ status: 'timed_out' }), settings({ notifyOn: 'failure' }))).toHaveLength(1);
  });

  it("answers a chat run's writer in their channel whatever notifyOn says, in the thread of their message", () => {
    const messages = plan(job({ source: 'slack', chatOrigin: origin({ messageId: '1700.01' }) }), null);
    expect(messages).toEqual([
      expect.objectContaining({
        dedupeKey: 'job:job-1:reply',
        provider: 'slack',
        target: {
          type: 'reply',
          teamId: 'T1',
          channelId: 'C0CHAT',
          userId: 'U0ADA',
          messageId: '1700.01',
          broadcast: false,
        },
        payload: expect.objectContaining({ kind: 'job_outcome', status: 'success' }),
      }),
    ]);
    const slash = plan(
      job({ source: 'discord', chatOrigin: origin({ provider: 'discord' }) }),
      settings({ notifyOn: 'none' }),
    );
    expect(slash).toEqual([
      expect.objectContaining({
        provider: 'discord',
        target: expect.objectContaining({ type: 'reply', messageId: null }),
      }),
    ]);
  });

  it("posts the answer and the trigger's notification to another channel; one broadcast answer to the same channel", () => {
    const chat = job({ source: 'slack', chatOrigin: origin() });
    expect(plan(chat, settings()).map((m) => [m.dedupeKey, m.target.type])).toEqual([
      ['job:job-1:reply', 'reply'],
      ['job:job-1:outcome', 'channel'],
    ]);
    const same = plan(chat, settings({ notifyChannelId: 'C0CHAT' }));
    expect(same).toEqual([
      expect.objectContaining({ target: expect.objectContaining({ type: 'reply', broadcast: true }) }),
    ]);
    // The same channel id in another provider's workspace is another channel.
    expect(plan(chat, settings({ notifyProvider: 'discord', notifyChannelId: 'C0CHAT' }))).toHaveLength(2);
    // notifyOn not matching: the answer alone, not broadcast.
    expect(plan(chat, settings({ notifyChannelId: 'C0CHAT', notifyOn: 'failure' }))).toEqual([
      expect.objectContaining({ target: expect.objectContaining({ broadcast: false }) }),
    ]);
  });

  it('tells the writer nothing more about a run its admission refused: they were answered at once', () => {
    const refused = job({ source: 'slack', status: 'rejected', startedAt: null, chatOrigin: origin() });
    expect(plan(refused, null, true)).toEqual([]);
    expect(plan(refused, settings({ notifyChannelId: 'C0CHAT' }), true)).toEqual([
      expect.objectContaining({ target: { type: 'channel', teamId: 'T1', channelId: 'C0CHAT' } }),
    ]);
  });
});

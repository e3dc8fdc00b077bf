import { describe, expect, it } from 'vitest';
import { batchText } from '../../../../src/domain/chat/notifications/notice-text.js';
import { planBatchMessages } from '../../../../src/domain/chat/notifications/plan.js';
import type { EndedBatch } from '../../../../src/domain/model/chat-outbox.js';

const AT = '2026-11-28T10:00:00.000Z';
const ended = (extra: Partial<EndedBatch> = {}): EndedBatch => ({
  orgId: 'org-1',
  batchId: 'batch-1',
  number: 12,
  triggerName: 'rotate-certs',
  workflowName: 'rotate',
  jobCount: 40,
  counts: { pending: 0, queued: 0, running: 0, success: 38, failed: 1, timed_out: 0, cancelled: 0, rejected: 1 },
  failedAgents: ['gw-07', 'gw-12'],
  notify: { notifyProvider: 'slack', notifyTeamId: 'T1', notifyChannelId: 'C1', notifyOn: 'failure' },
  chatOrigin: null,
  ...extra,
});

describe("a batch's chat message", () => {
  it("is one message to the trigger's channel when notifyOn matches the batch's outcome", () => {
    const [message, ...rest] = planBatchMessages(ended(), AT);
    expect(rest).toEqual([]);
    expect(message).toMatchObject({
      dedupeKey: 'batch:batch-1:outcome',
      jobId: null,
      provider: 'slack',
      target: { type: 'channel', teamId: 'T1', channelId: 'C1' },
      payload: { kind: 'batch_outcome', status: 'partial', succeeded: 38, failed: 2, cancelled: 0 },
    });
    const success = ended({ counts: { ...ended().counts, success: 40, failed: 0, rejected: 0 }, failedAgents: [] });
    expect(planBatchMessages(success, AT)).toEqual([]);
    expect(planBatchMessages({ ...success, notify: { ...success.notify!, notifyOn: 'success' } }, AT)).toHaveLength(1);
    const cancelled = ended({ counts: { ...ended().counts, success: 0, failed: 0, rejected: 0, cancelled: 40 } });
    expect(planBatchMessages(cancelled, AT)).toEqual([]);
    expect(planBatchMessages({ ...cancelled, notify: { ...cancelled.notify!, notifyOn: 'always' } }, AT)).toHaveLength(
      1,
    );
  });

  it('answers the writer of the chat command that started it, in its thread, once for the channel', () => {
    const origin = {
      provider: 'slack' as const,
      teamId: 'T1',
      channelId: 'C1',
      userId: 'U1',
      userName: 'ana',
      messageId: '1.2',
    };
    const messages = planBatchMessages(ended({ chatOrigin: origin }), AT);
    expect(messages).toEqual([
      expect.objectContaining({
        dedupeKey: 'batch:batch-1:reply',
        target: { type: 'reply', teamId: 'T1', channelId: 'C1', userId: 'U1', messageId: '1.2', broadcast: true },
      }),
    ]);
  });

  it('says the counts and names the agents that failed, counting those it does not name', () => {
    const [message] = planBatchMessages(ended({ jobCount: 50, counts: { ...ended().counts, failed: 11 } }), AT);
    expect(batchText(message!.payload as never, 'https://drover.example.com/')).toBe(
      'Drover batch #12 rotate-certs (rotate): PARTIAL, 38 of 50 succeeded, 12 failed: gw-07, gw-12 and 10 more ' +
        'https://drover.example.com/api/batches/batch-1',
    );
  });
});

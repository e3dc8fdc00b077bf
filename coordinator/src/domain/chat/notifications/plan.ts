import { isTerminalJobStatus, type TerminalJobStatus } from '@drover/shared';
import type {
  BatchNotice,
  ChannelTarget,
  EndedBatch,
  EndedJob,
  JobOutcomeNotice,
  NewOutboxMessage,
  NotifySettings,
  OutboxPayload,
  PlanBatchMessages,
  PlanJobMessages,
  ReplyTarget,
} from '../../model/chat-outbox.js';
import type { ChatOrigin } from '../../model/jobs.js';
import { batchStatus } from '../../fleet/batch-service.js';
import type { NotifyOn } from '../../model/triggers.js';

/**
 * Which outcomes each `notifyOn` posts. `failure` is an outcome that needs someone's attention:
 * failed, timed out, rejected. A cancelled job was stopped by a person on purpose, so it is
 * neither a success nor a failure: only `always` posts it.
 */
const POSTS: Record<NotifyOn, readonly TerminalJobStatus[]> = {
  always: ['success', 'failed', 'timed_out', 'cancelled', 'rejected'],
  success: ['success'],
  failure: ['failed', 'timed_out', 'rejected'],
  none: [],
};

export const notifyOnMatches = (notifyOn: NotifyOn, status: TerminalJobStatus): boolean =>
  POSTS[notifyOn].includes(status);

/** The key that makes a job's notification one message, however often its end is recorded. */
export const jobOutcomeKey = (jobId: string): string => `job:${jobId}:outcome`;
/** The same for the answer to a chat run's writer. */
export const jobReplyKey = (jobId: string): string => `job:${jobId}:reply`;

/**
 * A trigger job that ended (docs/chat.md, "Notifications" and "The outcome of a chat run"):
 * - a chat run answers its writer in the channel it was written in, whatever `notifyOn` says
 *   (they asked for it), unless the admission refused it: they were told at once;
 * - the trigger posts to its notification channel when `notifyOn` matches the outcome, except
 *   to the very channel of the answer: that answer stands for it (`broadcast`), so a channel
 *   never sees the same outcome twice.
 */
export const planJobMessages: PlanJobMessages = ({ job, triggerName, notify, atAdmission }: EndedJob, at) => {
  if (job.kind !== 'trigger' || !isTerminalJobStatus(job.status)) return [];
  const notice: JobOutcomeNotice = {
    kind: 'job_outcome',
    jobId: job.id,
    number: job.number,
    triggerName,
    workflowName: job.workflowName,
    status: job.status,
    ref: job.ref,
    startedAt: job.startedAt,
    finishedAt: job.finishedAt,
    exitCode: job.exitCode,
    errorMessage: job.errorMessage,
    output: job.output,
  };
  return routeOutcome(
    {
      orgId: job.orgId,
      jobId: job.id,
      keys: { outcome: jobOutcomeKey(job.id), reply: jobReplyKey(job.id) },
      notifies: notify !== null && notifyOnMatches(notify.notifyOn, job.status),
      notify,
      origin: atAdmission ? null : job.chatOrigin,
      payload: notice,
    },
    at,
  );
};

/** The key that makes a batch's notification one message; and its answer to a chat run's writer. */
export const batchOutcomeKey = (batchId: string): string => `batch:${batchId}:outcome`;
export const batchReplyKey = (batchId: string): string => `batch:${batchId}:reply`;

/**
 * Which ended batches a `notifyOn` posts: `failure` when a job of it did not succeed (a failed or
 * partial batch), `success` when all did; a batch cancelled whole, as a cancelled job, only `always`.
 */
const batchNotifies = (notifyOn: NotifyOn, status: BatchNotice['status']): boolean =>
  notifyOn === 'always' ||
  (notifyOn === 'success' && status === 'success') ||
  (notifyOn === 'failure' && (status === 'failed' || status === 'partial'));

/**
 * A batch that ended (docs/fleets.md, "Batches"): one message, the counts and the agents whose
 * jobs did not succeed, routed as a job's outcome is (the trigger's channel, the chat run's writer).
 */
export const planBatchMessages: PlanBatchMessages = (ended: EndedBatch, at) => {
  const { counts, orgId, notify, chatOrigin } = ended;
  const status = batchStatus(counts, ended.jobCount);
  if (status === 'pending' || status === 'running') return [];
  const notice: BatchNotice = {
    kind: 'batch_outcome',
    batchId: ended.batchId,
    number: ended.number,
    triggerName: ended.triggerName,
    workflowName: ended.workflowName,
    status,
    jobCount: ended.jobCount,
    succeeded: counts.success,
    failed: counts.failed + counts.timed_out + counts.rejected,
    cancelled: counts.cancelled,
    failedAgents: ended.failedAgents,
  };
  return routeOutcome(
    {
      orgId,
      jobId: null,
      keys: { outcome: batchOutcomeKey(notice.batchId), reply: batchReplyKey(notice.batchId) },
      notifies: notify !== null && batchNotifies(notify.notifyOn, notice.status),
      notify,
      origin: chatOrigin,
      payload: notice,
    },
    at,
  );
};

/**
 * An outcome's messages:
 * - a chat run answers its writer in the channel it was written in, whatever `notifyOn` says
 *   (they asked for it), unless the admission refused it: they were told at once (`origin` null);
 * - the trigger posts to its notification channel when it `notifies` of this outcome, except
 *   to the very channel of the answer: that answer stands for it (`broadcast`), so a channel
 *   never sees the same outcome twice.
 */
function routeOutcome(
  o: {
    orgId: string;
    jobId: string | null;
    keys: { outcome: string; reply: string };
    notifies: boolean;
    notify: NotifySettings | null;
    origin: ChatOrigin | null;
    payload: OutboxPayload;
  },
  at: string,
): NewOutboxMessage[] {
  const notification: (NewOutboxMessage & { target: ChannelTarget }) | null =
    o.notify && o.notifies
      ? {
          orgId: o.orgId,
          dedupeKey: o.keys.outcome,
          jobId: o.jobId,
          provider: o.notify.notifyProvider,
          target: { type: 'channel', teamId: o.notify.notifyTeamId, channelId: o.notify.notifyChannelId },
          payload: o.payload,
          createdAt: at,
        }
      : null;
  const origin = o.origin;
  if (!origin) return notification ? [notification] : [];

  const sameChannel =
    notification !== null &&
    notification.provider === origin.provider &&
    notification.target.teamId === origin.teamId &&
    notification.target.channelId === origin.channelId;
  const target: ReplyTarget = {
    type: 'reply',
    teamId: origin.teamId,
    channelId: origin.channelId,
    userId: origin.userId,
    messageId: origin.messageId ?? null,
    broadcast: sameChannel,
  };
  const reply: NewOutboxMessage = {
    orgId: o.orgId,
    dedupeKey: o.keys.reply,
    jobId: o.jobId,
    provider: origin.provider,
    target,
    payload: o.payload,
    createdAt: at,
  };
  return notification && !sameChannel ? [reply, notification] : [reply];
}

import { isTerminalJobStatus, type TerminalJobStatus } from '@drover/shared';
import type {
  ChannelTarget,
  EndedJob,
  JobOutcomeNotice,
  NewOutboxMessage,
  PlanJobMessages,
  ReplyTarget,
} from '../../model/chat-outbox.js';
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
  const notification: (NewOutboxMessage & { target: ChannelTarget }) | null =
    notify && notifyOnMatches(notify.notifyOn, job.status)
      ? {
          orgId: job.orgId,
          dedupeKey: jobOutcomeKey(job.id),
          jobId: job.id,
          provider: notify.notifyProvider,
          target: { type: 'channel', teamId: notify.notifyTeamId, channelId: notify.notifyChannelId },
          payload: notice,
          createdAt: at,
        }
      : null;
  const origin = job.chatOrigin;
  if (!origin || atAdmission) return notification ? [notification] : [];

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
    orgId: job.orgId,
    dedupeKey: jobReplyKey(job.id),
    jobId: job.id,
    provider: origin.provider,
    target,
    payload: notice,
    createdAt: at,
  };
  return notification && !sameChannel ? [reply, notification] : [reply];
};

import { isTerminalJobStatus, type TerminalJobStatus } from '@drover/shared';
import type { NewOutboxMessage, NotifySettings, PlanJobNotification } from '../../model/chat-outbox.js';
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

/** A trigger job that ended: its notification, or null when the trigger's settings post none. */
export const planJobNotification: PlanJobNotification = (job, settings: NotifySettings, at: string) => {
  if (job.kind !== 'trigger' || !isTerminalJobStatus(job.status)) return null;
  if (!notifyOnMatches(settings.notifyOn, job.status)) return null;
  return {
    orgId: job.orgId,
    dedupeKey: jobOutcomeKey(job.id),
    jobId: job.id,
    provider: settings.notifyProvider,
    target: { type: 'channel', teamId: settings.notifyTeamId, channelId: settings.notifyChannelId },
    payload: {
      kind: 'job_outcome',
      jobId: job.id,
      number: job.number,
      triggerName: settings.triggerName,
      workflowName: job.workflowName,
      status: job.status,
      ref: job.ref,
      startedAt: job.startedAt,
      finishedAt: job.finishedAt,
      exitCode: job.exitCode,
      errorMessage: job.errorMessage,
      output: job.output,
    },
    createdAt: at,
  } satisfies NewOutboxMessage;
};

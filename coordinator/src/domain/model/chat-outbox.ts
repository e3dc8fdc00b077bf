import type { TerminalJobStatus } from '@drover/shared';
import type { Job } from './jobs.js';
import type { ChatProvider, NotifyOn } from './triggers.js';

/** Where a message goes: a channel of a connected workspace (Slack) or guild (Discord). */
export interface ChannelTarget {
  type: 'channel';
  teamId: string;
  channelId: string;
}

export type OutboxTarget = ChannelTarget;

/** The outcome of a trigger job, as its notification shows it (docs/chat.md, "Notifications"). */
export interface JobOutcomeNotice {
  kind: 'job_outcome';
  jobId: string;
  /** The organization's number of the job. */
  number: number;
  triggerName: string;
  workflowName: string;
  status: TerminalJobStatus;
  ref: string | null;
  startedAt: string | null;
  finishedAt: string | null;
  exitCode: number | null;
  errorMessage: string | null;
  output: Record<string, unknown> | null;
}

export type OutboxPayload = JobOutcomeNotice;

export const OUTBOX_STATUSES = ['pending', 'sending', 'sent', 'failed'] as const;
export type OutboxStatus = (typeof OUTBOX_STATUSES)[number];

/** A message to post, as the enqueue writes it. */
export interface NewOutboxMessage {
  orgId: string;
  /** One message per key: enqueueing the same key again does nothing. */
  dedupeKey: string;
  jobId: string | null;
  provider: ChatProvider;
  target: OutboxTarget;
  payload: OutboxPayload;
  /** ISO instant; also its first attempt's time. */
  createdAt: string;
}

export interface OutboxMessage extends NewOutboxMessage {
  id: number;
  status: OutboxStatus;
  attempts: number;
  nextAttemptAt: string;
  lastError: string | null;
  sentAt: string | null;
  failedAt: string | null;
}

/** A message claimed by one worker until `leaseUntil`; only that claim may record its result. */
export interface ClaimedMessage extends OutboxMessage {
  claimToken: string;
}

/** A trigger's notification settings at the moment one of its jobs ended. */
export interface NotifySettings {
  triggerName: string;
  notifyProvider: ChatProvider;
  notifyTeamId: string;
  notifyChannelId: string;
  notifyOn: NotifyOn;
}

/**
 * Whether and what a trigger job that just ended posts (domain/chat/notifications/plan.ts): run
 * by the job repositories inside the write that ends the job, so the message is as durable as
 * the job's end.
 */
export type PlanJobNotification = (
  job: Job,
  settings: NotifySettings,
  /** ISO instant of the write that ended the job (the message's first attempt). */
  at: string,
) => NewOutboxMessage | null;

export interface ChatOutboxRepository {
  /**
   * Claims up to `limit` messages due at `now` (`pending`, or `sending` whose lease ran out: its
   * worker stopped), each counted as an attempt and leased until `leaseUntil`.
   */
  claimDue(now: string, leaseUntil: string, limit: number): Promise<ClaimedMessage[]>;
  /** The claim's message was delivered. False when the claim was lost (another worker holds it). */
  markSent(id: number, claimToken: string, at: string): Promise<boolean>;
  /** The claim's attempt failed: try again at `nextAttemptAt`. */
  retryLater(id: number, claimToken: string, error: string, nextAttemptAt: string): Promise<boolean>;
  /** The claim's message is given up. */
  markFailed(id: number, claimToken: string, error: string, at: string): Promise<boolean>;
  /** The messages of a job, oldest first. */
  listByJob(jobId: string): Promise<OutboxMessage[]>;
}

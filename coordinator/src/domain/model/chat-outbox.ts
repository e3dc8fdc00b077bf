import type { DamagedRow } from '../../util/json.js';
import type { TerminalJobStatus } from '@drover/shared';
import type { ChatOrigin, Job } from './jobs.js';
import type { ChatProvider, NotifyOn } from './triggers.js';

/** Where a message goes: a channel of a connected workspace (Slack) or guild (Discord). */
export interface ChannelTarget {
  type: 'channel';
  teamId: string;
  channelId: string;
}

/**
 * An answer to the person who wrote a chat command, in the channel they wrote it in: in the
 * thread of their message when there is one (a mention), else a message that names them (a
 * slash command, whose text the channel never saw). `broadcast`: the trigger also notifies this
 * channel, so the answer stands for that notification (Slack shows the thread reply in the
 * channel too).
 */
export interface ReplyTarget {
  type: 'reply';
  teamId: string;
  channelId: string;
  userId: string;
  /** The message to answer (Slack's `ts`, Discord's message id), or null. */
  messageId: string | null;
  broadcast: boolean;
}

/** A message only `userId` sees, in the channel (Slack's `chat.postEphemeral`). */
export interface EphemeralTarget {
  type: 'ephemeral';
  teamId: string;
  channelId: string;
  userId: string;
  /** The thread it is shown in (a mention written in a thread); absent: the channel. */
  threadId?: string;
}

export type OutboxTarget = ChannelTarget | ReplyTarget | EphemeralTarget;

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

/** The answer to a chat command that came as a mention (docs/chat.md, "The answer"): plain text. */
export interface ChatAnswerNotice {
  kind: 'chat_answer';
  text: string;
}

/** A batch that ended (docs/fleets.md, "Batches"): its counts and the agents whose jobs did not succeed. */
export interface BatchNotice {
  kind: 'batch_outcome';
  batchId: string;
  /** The organization's number of the batch. */
  number: number;
  triggerName: string;
  workflowName: string;
  status: 'success' | 'failed' | 'partial' | 'cancelled';
  jobCount: number;
  succeeded: number;
  /** Failed, timed out or rejected. */
  failed: number;
  cancelled: number;
  /** The first names of the agents whose jobs failed (the rest are counted in `failed`). */
  failedAgents: string[];
}

/** A staged rollout that paused by itself (docs/ota.md, "Staged rollouts"): its wave and failed devices. */
export interface RolloutPausedNotice {
  kind: 'rollout_paused';
  orgId: string;
  releaseId: string;
  applicationId: string;
  appSlug: string;
  version: string;
  /** 1-based. */
  wave: number;
  waves: number;
  failed: number;
  ended: number;
  maxFailureRate: number;
  /** The first names of the wave's agents whose update failed (the rest are counted in `failed`). */
  failedDevices: string[];
}

export type OutboxPayload = JobOutcomeNotice | ChatAnswerNotice | BatchNotice | RolloutPausedNotice;

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

/** Where a trigger posts the outcome of its jobs (its `notify*` settings). */
export interface NotifySettings {
  notifyProvider: ChatProvider;
  notifyTeamId: string;
  notifyChannelId: string;
  notifyOn: NotifyOn;
}

/** A trigger job that just ended, with what its messages need of its trigger. */
export interface EndedJob {
  job: Job;
  triggerName: string;
  /** The trigger's notification settings, or null when it posts none. */
  notify: NotifySettings | null;
  /** Ended by the admission that created it (a limit refused the call): its writer was told already. */
  atAdmission: boolean;
}

/** A batch that just ended, with what its message needs. */
export interface EndedBatch {
  orgId: string;
  batchId: string;
  number: number;
  triggerName: string;
  workflowName: string;
  jobCount: number;
  /** Its jobs per status. */
  counts: Record<TerminalJobStatus | 'pending' | 'queued' | 'running', number>;
  /** The first agents (by name) whose jobs did not succeed; the message says how many more. */
  failedAgents: string[];
  notify: NotifySettings | null;
  /** A batch started by a chat command: where to answer its writer. */
  chatOrigin: ChatOrigin | null;
}

/** What a batch that just ended posts (written with its end, db/repositories/batches.ts). */
export type PlanBatchMessages = (ended: EndedBatch, at: string) => NewOutboxMessage[];

/**
 * What a trigger job that just ended posts (domain/chat/notifications/plan.ts): run by the job
 * repositories inside the write that ends the job, so the messages are as durable as its end.
 */
export type PlanJobMessages = (
  ended: EndedJob,
  /** ISO instant of the write that ended the job (the messages' first attempt). */
  at: string,
) => NewOutboxMessage[];

export interface ChatOutboxRepository {
  /**
   * Claims up to `limit` messages due at `now` (`pending`, or `sending` whose lease ran out: its
   * worker stopped), each counted as an attempt and leased until `leaseUntil`. One whose row does
   * not parse (only a damaged or hand-edited database holds one) is given up (`failed`, at `now`)
   * and reported in `damaged` (its id), rather than failing the claim of the others.
   */
  claimDue(
    now: string,
    leaseUntil: string,
    limit: number,
  ): Promise<{ claimed: ClaimedMessage[]; damaged: DamagedRow[] }>;
  /** The claim's message was delivered. False when the claim was lost (another worker holds it). */
  markSent(id: number, claimToken: string, at: string): Promise<boolean>;
  /** The claim's attempt failed: try again at `nextAttemptAt`. */
  retryLater(id: number, claimToken: string, error: string, nextAttemptAt: string): Promise<boolean>;
  /** The claim's message is given up. */
  markFailed(id: number, claimToken: string, error: string, at: string): Promise<boolean>;
  /** Queues one message (nothing when its dedupe key is queued already). */
  enqueue(message: NewOutboxMessage): Promise<void>;
  /**
   * The messages of a job, oldest first; one whose stored row does not parse (a damaged database)
   * is left out and named in `damaged`, so that the job's page still opens.
   */
  listByJob(jobId: string): Promise<{ messages: OutboxMessage[]; damaged: DamagedRow[] }>;
  /**
   * Deletes the delivered or given-up messages of no job (answers that started nothing) older
   * than `before`; a job's messages live as long as the job. Returns how many.
   */
  pruneJobless(before: string): Promise<number>;
}

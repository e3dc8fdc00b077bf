import type { OutboxMessage, OutboxStatus } from '../../model/chat-outbox.js';
import type { ChatProvider } from '../../model/triggers.js';

/**
 * What a message of a job is: the trigger's `notification` to its channel, the `reply` that tells
 * a chat run's writer its outcome, or the `answer` to a mention that started the job.
 */
export const JOB_MESSAGE_KINDS = ['notification', 'reply', 'answer'] as const;
export type JobMessageKind = (typeof JOB_MESSAGE_KINDS)[number];

/** A job's chat message as the job detail shows it (docs/chat.md, "What the job shows"). */
export interface JobNotificationView {
  kind: JobMessageKind;
  provider: ChatProvider;
  teamId: string;
  channelId: string;
  status: OutboxStatus;
  attempts: number;
  lastError: string | null;
  createdAt: string;
  /** When the next attempt is due (or its lease ends, while `sending`); null once sent or failed. */
  nextAttemptAt: string | null;
  sentAt: string | null;
  failedAt: string | null;
}

const kindOf = (m: OutboxMessage): JobMessageKind =>
  m.payload.kind === 'chat_answer' ? 'answer' : m.target.type === 'channel' ? 'notification' : 'reply';

export const toJobNotificationView = (m: OutboxMessage): JobNotificationView => ({
  kind: kindOf(m),
  provider: m.provider,
  teamId: m.target.teamId,
  channelId: m.target.channelId,
  status: m.status,
  attempts: m.attempts,
  lastError: m.lastError,
  createdAt: m.createdAt,
  nextAttemptAt: m.status === 'pending' || m.status === 'sending' ? m.nextAttemptAt : null,
  sentAt: m.sentAt,
  failedAt: m.failedAt,
});

import type { OutboxMessage, OutboxStatus } from '../../model/chat-outbox.js';
import type { ChatProvider } from '../../model/triggers.js';

/** A job's chat message as the job detail shows it (docs/chat.md, "What the job shows"). */
export interface JobNotificationView {
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

export const toJobNotificationView = (m: OutboxMessage): JobNotificationView => ({
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

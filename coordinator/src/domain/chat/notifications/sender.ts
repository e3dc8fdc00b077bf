import type { OutboxPayload, OutboxTarget } from '../../model/chat-outbox.js';
import type { ChatProvider } from '../../model/triggers.js';

/** One message to post, with what the provider needs to accept it. */
export interface ChatDelivery {
  target: OutboxTarget;
  payload: OutboxPayload;
  /** The workspace's own token (Slack's bot token), or null when the provider uses the app's. */
  token: string | null;
  /** The coordinator's public URL, for links to job pages. */
  publicUrl: string;
}

/** Posts messages to one provider (domain/chat/providers/senders/). Throws DeliveryFailure when it did not. */
export interface ChatSender {
  readonly provider: ChatProvider;
  send(delivery: ChatDelivery): Promise<void>;
}

export type ChatSenders = Partial<Record<ChatProvider, ChatSender>>;

/**
 * A message the provider did not take. `retry`: `later` when trying again may succeed (the
 * provider is down, rate limiting, unreachable), `never` when it cannot (the channel does not
 * exist, the bot was removed, the token was revoked). `retryAfterMs`: how long the provider asked
 * to wait (HTTP 429 `Retry-After`).
 */
export class DeliveryFailure extends Error {
  constructor(
    message: string,
    readonly retry: 'later' | 'never',
    readonly retryAfterMs: number | null = null,
  ) {
    super(message);
    this.name = 'DeliveryFailure';
  }
}

import type { ChatProvider } from './triggers.js';

/** The signed chat requests already received (their hashes), kept until `expiresAt` (docs/chat.md). */
export interface ChatRequestRepository {
  /**
   * Records the request, once: true the first time it is seen (by any coordinator on the
   * database), false when it was seen before and has not expired at `now`. Forgets the expired ones.
   */
  firstSeen(provider: ChatProvider, requestHash: string, expiresAt: string, now: string): Promise<boolean>;
}

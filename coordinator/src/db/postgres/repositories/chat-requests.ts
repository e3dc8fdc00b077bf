import type { ChatRequestRepository } from '../../../domain/model/chat-requests.js';
import type { PgPool } from '../pool.js';
import { run } from '../rows.js';
import { inTransaction } from '../transaction.js';

/** One INSERT ... ON CONFLICT DO NOTHING: of coordinators receiving the same request at once, one records it. */
export function createChatRequestRepository(pool: PgPool): ChatRequestRepository {
  return {
    async firstSeen(provider, requestHash, expiresAt, now) {
      return inTransaction(pool, async (tx) => {
        await run(tx, 'DELETE FROM chat_requests_seen WHERE expires_at <= $1', [now]);
        const inserted = await run(
          tx,
          `INSERT INTO chat_requests_seen (provider, request_hash, expires_at) VALUES ($1, $2, $3)
           ON CONFLICT DO NOTHING`,
          [provider, requestHash, expiresAt],
        );
        return inserted > 0;
      });
    },
  };
}

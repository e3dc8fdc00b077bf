import type { SignedOutSessionRepository } from '../../../domain/model/signed-out-sessions.js';
import type { PgPool } from '../pool.js';
import { one, run } from '../rows.js';
import { inTransaction } from '../transaction.js';

export function createSignedOutSessionRepository(pool: PgPool): SignedOutSessionRepository {
  return {
    async add(sessionId, expiresAt, now) {
      await inTransaction(pool, async (tx) => {
        await run(tx, 'DELETE FROM signed_out_sessions WHERE expires_at < $1', [now]);
        await run(tx, 'INSERT INTO signed_out_sessions (id, expires_at) VALUES ($1, $2) ON CONFLICT DO NOTHING', [
          sessionId,
          expiresAt,
        ]);
      });
    },
    async has(sessionId) {
      return (await one(pool, 'SELECT 1 AS one FROM signed_out_sessions WHERE id = $1', [sessionId])) !== null;
    },
  };
}

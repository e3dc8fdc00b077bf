import type {
  ChatOutboxRepository,
  ClaimedMessage,
  OutboxMessage,
  OutboxPayload,
  OutboxStatus,
  OutboxTarget,
} from '../../../domain/model/chat-outbox.js';
import type { ChatProvider } from '../../../domain/model/triggers.js';
import type { PgPool } from '../pool.js';
import { ENQUEUE_MESSAGE, enqueueParams } from '../../repositories/job-messages.js';
import { PostgresDatabase } from '../../sql/postgres.js';
import { all, run } from '../rows.js';

interface OutboxRow {
  id: number;
  org_id: string;
  dedupe_key: string;
  job_id: string | null;
  provider: ChatProvider;
  target: OutboxTarget;
  payload: OutboxPayload;
  status: OutboxStatus;
  attempts: number;
  next_attempt_at: string;
  claim_token: string | null;
  last_error: string | null;
  created_at: string;
  sent_at: string | null;
  failed_at: string | null;
}

const toMessage = (r: OutboxRow): OutboxMessage => ({
  id: r.id,
  orgId: r.org_id,
  dedupeKey: r.dedupe_key,
  jobId: r.job_id,
  provider: r.provider,
  target: r.target,
  payload: r.payload,
  status: r.status,
  attempts: r.attempts,
  nextAttemptAt: r.next_attempt_at,
  lastError: r.last_error,
  createdAt: r.created_at,
  sentAt: r.sent_at,
  failedAt: r.failed_at,
});

/**
 * The delivery worker's side of the outbox. A claim takes the due rows with `FOR UPDATE SKIP
 * LOCKED`, so coordinators claiming at once split the due messages instead of waiting on, or
 * sharing, each other's; its `claim_token` guards every later write of that attempt.
 */
export function createChatOutboxRepository(pool: PgPool): ChatOutboxRepository {
  const database = new PostgresDatabase(pool);
  const settle = async (sql: string, values: unknown[]) => (await run(pool, sql, values)) === 1;
  return {
    async claimDue(now, leaseUntil, limit) {
      const rows = await all<OutboxRow & { due_at: string }>(
        pool,
        `WITH due AS (
           SELECT id, next_attempt_at FROM chat_outbox
           WHERE status IN ('pending', 'sending') AND next_attempt_at <= $1
           ORDER BY next_attempt_at, id LIMIT $3 FOR UPDATE SKIP LOCKED)
         UPDATE chat_outbox o SET status = 'sending', attempts = o.attempts + 1, next_attempt_at = $2,
           claim_token = gen_random_uuid()::text
         FROM due WHERE o.id = due.id
         RETURNING o.*, due.next_attempt_at AS due_at`,
        [now, leaseUntil, limit],
      );
      rows.sort((a, b) => (a.due_at < b.due_at ? -1 : a.due_at > b.due_at ? 1 : a.id - b.id));
      return rows.map((r): ClaimedMessage => ({ ...toMessage(r), claimToken: r.claim_token as string }));
    },
    markSent(id, claimToken, at) {
      return settle(
        `UPDATE chat_outbox SET status = 'sent', sent_at = $1, last_error = NULL, claim_token = NULL
         WHERE id = $2 AND claim_token = $3 AND status = 'sending'`,
        [at, id, claimToken],
      );
    },
    retryLater(id, claimToken, error, nextAttemptAt) {
      return settle(
        `UPDATE chat_outbox SET status = 'pending', last_error = $1, next_attempt_at = $2, claim_token = NULL
         WHERE id = $3 AND claim_token = $4 AND status = 'sending'`,
        [error, nextAttemptAt, id, claimToken],
      );
    },
    markFailed(id, claimToken, error, at) {
      return settle(
        `UPDATE chat_outbox SET status = 'failed', last_error = $1, failed_at = $2, claim_token = NULL
         WHERE id = $3 AND claim_token = $4 AND status = 'sending'`,
        [error, at, id, claimToken],
      );
    },
    async enqueue(message) {
      await database.run(ENQUEUE_MESSAGE, enqueueParams(message));
    },
    async listByJob(jobId) {
      return (await all<OutboxRow>(pool, 'SELECT * FROM chat_outbox WHERE job_id = $1 ORDER BY id', [jobId])).map(
        toMessage,
      );
    },
    async pruneJobless(before) {
      return run(
        pool,
        `DELETE FROM chat_outbox WHERE job_id IS NULL
           AND ((status = 'sent' AND sent_at < $1) OR (status = 'failed' AND failed_at < $1))`,
        [before],
      );
    },
  };
}

import { randomUUID } from 'node:crypto';
import type {
  ChatOutboxRepository,
  ClaimedMessage,
  OutboxMessage,
  OutboxPayload,
  OutboxStatus,
  OutboxTarget,
} from '../../domain/model/chat-outbox.js';
import type { ChatProvider } from '../../domain/model/triggers.js';
import { parseJsonColumn } from '../../util/json.js';
import type { SqliteDatabase } from '../sql/sqlite.js';
import { ENQUEUE_MESSAGE, enqueueParams } from './job-messages.js';

interface OutboxRow {
  id: number;
  org_id: string;
  dedupe_key: string;
  job_id: string | null;
  provider: ChatProvider;
  target: string;
  payload: string;
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
  target: parseJsonColumn<OutboxTarget>(r.target, 'chat_outbox.target') as OutboxTarget,
  payload: parseJsonColumn<OutboxPayload>(r.payload, 'chat_outbox.payload') as OutboxPayload,
  status: r.status,
  attempts: r.attempts,
  nextAttemptAt: r.next_attempt_at,
  lastError: r.last_error,
  createdAt: r.created_at,
  sentAt: r.sent_at,
  failedAt: r.failed_at,
});

/**
 * The delivery worker's side of the outbox. A claim is one UPDATE ... RETURNING, so two
 * coordinators on one database never claim the same message; its `claim_token` guards every
 * later write of that attempt.
 */
export function createChatOutboxRepository(database: SqliteDatabase): ChatOutboxRepository {
  const { db } = database;
  const due = db.prepare<[string, number], { id: number }>(
    `SELECT id FROM chat_outbox WHERE status IN ('pending', 'sending') AND next_attempt_at <= ?
     ORDER BY next_attempt_at, id LIMIT ?`,
  );
  const claim = db.prepare<[{ id: number; now: string; leaseUntil: string; token: string }], OutboxRow>(
    `UPDATE chat_outbox SET status = 'sending', attempts = attempts + 1, next_attempt_at = @leaseUntil,
       claim_token = @token
     WHERE id = @id AND status IN ('pending', 'sending') AND next_attempt_at <= @now RETURNING *`,
  );
  const claimDue = db.transaction((now: string, leaseUntil: string, limit: number): ClaimedMessage[] => {
    const claimed: ClaimedMessage[] = [];
    for (const { id } of due.all(now, limit)) {
      const token = randomUUID();
      const row = claim.get({ id, now, leaseUntil, token });
      if (row) claimed.push({ ...toMessage(row), claimToken: token });
    }
    return claimed;
  });
  const sent = db.prepare(
    `UPDATE chat_outbox SET status = 'sent', sent_at = ?, last_error = NULL, claim_token = NULL
     WHERE id = ? AND claim_token = ? AND status = 'sending'`,
  );
  const later = db.prepare(
    `UPDATE chat_outbox SET status = 'pending', last_error = ?, next_attempt_at = ?, claim_token = NULL
     WHERE id = ? AND claim_token = ? AND status = 'sending'`,
  );
  const failed = db.prepare(
    `UPDATE chat_outbox SET status = 'failed', last_error = ?, failed_at = ?, claim_token = NULL
     WHERE id = ? AND claim_token = ? AND status = 'sending'`,
  );
  const byJob = db.prepare<[string], OutboxRow>('SELECT * FROM chat_outbox WHERE job_id = ? ORDER BY id');
  const insert = database.prepare(ENQUEUE_MESSAGE);
  const prune = db.prepare<[string, string]>(
    `DELETE FROM chat_outbox WHERE job_id IS NULL AND ((status = 'sent' AND sent_at < ?) OR (status = 'failed' AND failed_at < ?))`,
  );
  return {
    async claimDue(now, leaseUntil, limit) {
      // Most rounds find nothing due: they take no write lock.
      if (due.all(now, 1).length === 0) return [];
      return claimDue.immediate(now, leaseUntil, limit);
    },
    async markSent(id, claimToken, at) {
      return sent.run(at, id, claimToken).changes === 1;
    },
    async retryLater(id, claimToken, error, nextAttemptAt) {
      return later.run(error, nextAttemptAt, id, claimToken).changes === 1;
    },
    async markFailed(id, claimToken, error, at) {
      return failed.run(error, at, id, claimToken).changes === 1;
    },
    async enqueue(message) {
      insert.run(enqueueParams(message));
    },
    async listByJob(jobId) {
      return byJob.all(jobId).map(toMessage);
    },
    async pruneJobless(before) {
      return prune.run(before, before).changes;
    },
  };
}

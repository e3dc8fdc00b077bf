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
import { mapSoundRows, parseJsonColumn, type DamagedRow } from '../../util/json.js';
import { all, command, query, run, values, type Database, type Flow } from '../sql/index.js';
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

const DUE_STATUS = `status IN ('pending', 'sending')`;
const ANY_DUE = values<number, [string]>(
  `SELECT 1 FROM chat_outbox WHERE ${DUE_STATUS} AND next_attempt_at <= ? LIMIT 1`,
);
// Rows another coordinator's claim holds are skipped, not waited for.
const DUE = values<number, [string, number]>(
  (d) => `SELECT id FROM chat_outbox WHERE ${DUE_STATUS} AND next_attempt_at <= ?
   ORDER BY next_attempt_at, id LIMIT ? ${d.forUpdateSkipLocked}`,
);
const CLAIM = query<OutboxRow, { ids: string; now: string; leaseUntil: string; token: string }>(
  (d) => `UPDATE chat_outbox SET status = 'sending', attempts = attempts + 1, next_attempt_at = @leaseUntil,
     claim_token = @token
   WHERE id IN (SELECT CAST(value AS INTEGER) FROM ${d.jsonArrayElements}(@ids))
     AND ${DUE_STATUS} AND next_attempt_at <= @now
   RETURNING *`,
);
const SENT = command<[string, number, string]>(
  `UPDATE chat_outbox SET status = 'sent', sent_at = ?, last_error = NULL, claim_token = NULL
   WHERE id = ? AND claim_token = ? AND status = 'sending'`,
);
const LATER = command<[string, string, number, string]>(
  `UPDATE chat_outbox SET status = 'pending', last_error = ?, next_attempt_at = ?, claim_token = NULL
   WHERE id = ? AND claim_token = ? AND status = 'sending'`,
);
const FAILED = command<[string, string, number, string]>(
  `UPDATE chat_outbox SET status = 'failed', last_error = ?, failed_at = ?, claim_token = NULL
   WHERE id = ? AND claim_token = ? AND status = 'sending'`,
);
/** The text a message whose stored row does not parse is given up with. */
const damagedError = (column: string) =>
  `its stored ${column.slice('chat_outbox.'.length)} does not parse (a damaged database): it cannot be sent`;

const BY_JOB = query<OutboxRow, [string]>('SELECT * FROM chat_outbox WHERE job_id = ? ORDER BY id');
const PRUNE = command<[string, string]>(
  `DELETE FROM chat_outbox WHERE job_id IS NULL
     AND ((status = 'sent' AND sent_at < ?) OR (status = 'failed' AND failed_at < ?))`,
);

/**
 * The delivery worker's side of the outbox. A claim takes the due rows (on PostgreSQL with `FOR
 * UPDATE SKIP LOCKED`, so coordinators claiming at once split them instead of waiting on, or
 * sharing, each other's) and leases them with a new `claim_token` (one per claim, shared by the
 * messages it took), which guards every later write of that attempt with the message's id.
 */
export function createChatOutboxRepository(db: Database): ChatOutboxRepository {
  return {
    async claimDue(now, leaseUntil, limit) {
      // Most rounds find nothing due: they take no write lock.
      if ((await db.one(ANY_DUE, [now])) === null) return { claimed: [], damaged: [] };
      const token = randomUUID();
      return db.transaction(
        function* (): Flow<{ claimed: ClaimedMessage[]; damaged: DamagedRow[] }> {
          const ids = yield* all(DUE, [now, limit]);
          if (ids.length === 0) return { claimed: [], damaged: [] };
          const rows = yield* all(CLAIM, { ids: JSON.stringify(ids), now, leaseUntil, token });
          // In due order, as the due rows were read.
          const order = new Map(ids.map((id, i) => [id, i]));
          rows.sort((a, b) => (order.get(a.id) ?? 0) - (order.get(b.id) ?? 0));
          const { sound, damaged } = mapSoundRows(rows, toMessage, (r) => String(r.id));
          // One that does not parse is given up, rather than claimed again after each lease.
          for (const d of damaged) yield* run(FAILED, [damagedError(d.column), now, Number(d.id), token]);
          return { claimed: sound.map((m) => ({ ...m, claimToken: token })), damaged };
        },
        { immediate: true },
      );
    },
    async markSent(id, claimToken, at) {
      return (await db.run(SENT, [at, id, claimToken])) === 1;
    },
    async retryLater(id, claimToken, error, nextAttemptAt) {
      return (await db.run(LATER, [error, nextAttemptAt, id, claimToken])) === 1;
    },
    async markFailed(id, claimToken, error, at) {
      return (await db.run(FAILED, [error, at, id, claimToken])) === 1;
    },
    async enqueue(message) {
      await db.run(ENQUEUE_MESSAGE, enqueueParams(message));
    },
    async listByJob(jobId) {
      const { sound, damaged } = mapSoundRows(await db.all(BY_JOB, [jobId]), toMessage, (r) => String(r.id));
      return { messages: sound, damaged };
    },
    async pruneJobless(before) {
      return db.run(PRUNE, [before, before]);
    },
  };
}

import type { JobStatus } from '@drover/shared';
import type {
  Batch,
  BatchAdmissionOutcome,
  BatchAdmissionRequest,
  BatchCounts,
  BatchRepository,
  BatchWithCounts,
} from '../../domain/model/batches.js';
import type { Job } from '../../domain/model/jobs.js';
import type { DecideLimits } from '../../domain/model/transaction-rules.js';
import type { PlanBatchMessages } from '../../domain/model/chat-outbox.js';
import type { ChatOrigin } from '../../domain/model/jobs.js';
import type { ChatProvider, NotifyOn } from '../../domain/model/triggers.js';
import { ENQUEUE_MESSAGE, enqueueParams } from './job-messages.js';
import { all, flag, lock, manyRows, one, query, rows, run, values, type Database, type Flow } from '../sql/index.js';
import { toJob, type JobRow } from './job-rows.js';
import { CLAIM_OCCURRENCE } from './cron-occurrences.js';
import { lockOrg } from './parent-locks.js';
import { BUMP_COUNTERS, FIND_KEY, hasLimit, INSERT_BLOCK, readCounts, SAVE_KEY, type Scope } from './trigger-runs.js';

interface BatchRow {
  id: string;
  org_id: string;
  number: number;
  trigger_id: string;
  workflow_name: string;
  selector: string;
  max_parallel: number | null;
  source: Batch['source'];
  api_token_id: string | null;
  user_id: string | null;
  job_count: number;
  created_at: string;
  ended_at: string | null;
}

const toBatch = (r: BatchRow): Batch => ({
  id: r.id,
  orgId: r.org_id,
  number: r.number,
  triggerId: r.trigger_id,
  workflowName: r.workflow_name,
  selector: r.selector,
  maxParallel: r.max_parallel,
  source: r.source,
  apiTokenId: r.api_token_id,
  userId: r.user_id,
  jobCount: r.job_count,
  createdAt: r.created_at,
  endedAt: r.ended_at,
});

const OPEN = `('pending', 'queued', 'running')`;

/** What a batch's jobs share (the call's), in the order of INSERT_BATCH_JOBS. */
type BatchFixed = [
  orgId: string,
  source: string,
  triggerId: string,
  workflowName: string,
  ref: string | null,
  debug: 0 | 1,
  forced: 0 | 1,
  forceReason: string | null,
  apiTokenId: string | null,
  userId: string | null,
  createdAt: string,
  chatOrigin: string | null,
  batchId: string,
];
/** What each job of a batch has of its own (its agent's), then its organization again for its number. */
type BatchJobTuple = [
  id: string,
  agentId: string | null,
  workflowId: string | null,
  status: string,
  params: string,
  errorMessage: string | null,
  timeoutMs: number | null,
  finishedAt: string | null,
  held: 0 | 1,
  orgId: string,
];

/**
 * A batch's jobs, written in the batch's write: on SQLite one prepared INSERT per job (each takes
 * the organization's next number as a single job's does, job-rows.ts); on PostgreSQL one INSERT
 * of them all from a JSON array, their numbers reserved at once in job_number_counters (one round
 * trip for 10,000 jobs instead of 10,000).
 */
const INSERT_BATCH_JOBS = manyRows<BatchFixed, BatchJobTuple, string>(
  `INSERT INTO jobs (org_id, kind, source, trigger_id, workflow_name, ref, debug, forced, force_reason, api_token_id,
     user_id, created_at, chat_origin, batch_id, id, agent_id, workflow_id, status, params, error_message, timeout_ms,
     finished_at, held, number)
   VALUES (?, 'trigger', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?,
     (SELECT IFNULL(MAX(number), 0) + 1 FROM jobs WHERE org_id = +?))`,
  `WITH r AS (SELECT x.value AS v, x.ord FROM json_array_elements($14::json) WITH ORDINALITY AS x(value, ord)),
   k AS (SELECT count(*) AS n FROM r),
   n AS (
     INSERT INTO job_number_counters AS c (org_id, last_number)
     VALUES ($1, (SELECT COALESCE(MAX(number), 0) FROM jobs WHERE org_id = $1) + (SELECT n FROM k))
     ON CONFLICT (org_id) DO UPDATE SET last_number = c.last_number + (SELECT n FROM k)
     RETURNING last_number)
   INSERT INTO jobs (org_id, kind, source, trigger_id, workflow_name, ref, debug, forced, force_reason, api_token_id,
     user_id, created_at, chat_origin, batch_id, id, agent_id, workflow_id, status, params, error_message, timeout_ms,
     finished_at, held, number)
   SELECT $1, 'trigger', $2, $3, $4, $5, $6::boolean, $7::boolean, $8, $9, $10, $11::timestamptz, $12::json, $13,
     v->>0, v->>1, v->>2, v->>3, (v->>4)::json, v->>5, (v->>6)::bigint, (v->>7)::timestamptz, (v->>8)::boolean,
     (SELECT last_number FROM n) - (SELECT n FROM k) + r.ord
   FROM r ORDER BY r.ord
   RETURNING id`,
  ([id]) => id,
);
const NO_LIMITS = { perMinute: null, perHour: null, perDay: null };

/** The organization's next number: its row is locked first on PostgreSQL (lockOrg), SQLite's writer is one. */
const INSERT_BATCH = query<BatchRow, Omit<Batch, 'number' | 'endedAt'>>(
  `INSERT INTO batches (id, org_id, number, trigger_id, workflow_name, selector, max_parallel, source, api_token_id,
     user_id, job_count, created_at)
   VALUES (@id, @orgId, (SELECT COALESCE(MAX(number), 0) + 1 FROM batches WHERE org_id = @orgId), @triggerId,
     @workflowName, @selector, @maxParallel, @source, @apiTokenId, @userId, @jobCount, @createdAt)
   RETURNING *`,
);
const BY_ID = query<BatchRow, [string]>('SELECT * FROM batches WHERE id = ?');
const IN_ORG = query<BatchRow, [string, string]>('SELECT * FROM batches WHERE org_id = ? AND id = ?');
const PAGE = query<BatchRow, [string, number, number]>(
  'SELECT * FROM batches WHERE org_id = ? AND number < ? ORDER BY number DESC LIMIT ?',
);
/** A page of one trigger's batches: the organization's, so another's trigger gives none. */
const TRIGGER_PAGE = query<BatchRow, [string, string, number, number]>(
  'SELECT * FROM batches WHERE org_id = ? AND trigger_id = ? AND number < ? ORDER BY number DESC LIMIT ?',
);
const COUNTS = query<{ batch_id: string; status: JobStatus; n: number }, [string]>(
  (d) => `SELECT batch_id, status, count(*) AS n FROM jobs
    WHERE batch_id ${d.inJsonArray('?')} GROUP BY batch_id, status`,
);
const JOBS = query<JobRow, [string]>('SELECT * FROM jobs WHERE batch_id = ? ORDER BY seq');
/** On the partial index of open batch jobs (jobs_batch_open): as many rows read as jobs are open. */
const OPEN_JOB_IDS = values<string, [string]>(`SELECT id FROM jobs WHERE batch_id = ? AND status IN ${OPEN}`);
const MAX_PARALLEL = values<number | null, [string]>('SELECT max_parallel FROM batches WHERE id = ?');
const HANDED_OUT = values<number, [string]>(
  `SELECT count(*) FROM jobs WHERE batch_id = ? AND held = FALSE AND status IN ${OPEN}`,
);
const RELEASE = query<JobRow, [string, number]>(
  `UPDATE jobs SET held = FALSE WHERE seq IN (
     SELECT seq FROM jobs WHERE batch_id = ? AND held = TRUE AND status = 'pending' ORDER BY seq LIMIT ?)
   RETURNING *`,
);
const SETTLE = query<BatchRow, [string, string]>(
  `UPDATE batches SET ended_at = ? WHERE id = ? AND ended_at IS NULL
     AND NOT EXISTS (SELECT 1 FROM jobs WHERE batch_id = batches.id AND status IN ${OPEN})
   RETURNING *`,
);
/** A scheduled batch of the trigger not ended yet (overlap policy `skip`). */
const OPEN_SCHEDULED_BATCH = values<number, [string]>(
  "SELECT 1 FROM batches WHERE trigger_id = ? AND source = 'cron' AND ended_at IS NULL LIMIT 1",
);
/** What an ended batch's message needs of its trigger. */
const NOTIFY_OF = query<
  {
    name: string;
    provider: ChatProvider | null;
    team_id: string | null;
    channel_id: string | null;
    notify_on: NotifyOn;
    deleted_at: string | null;
  },
  [string]
>(
  `SELECT name, notify_provider AS provider, notify_team_id AS team_id, notify_channel_id AS channel_id, notify_on,
     deleted_at
   FROM triggers WHERE id = ?`,
);
/** How many of the agents whose jobs failed a batch's message names (it counts the others). */
const FAILED_AGENTS_NAMED = 10;
/** The agents whose jobs of the batch did not succeed (failed, timed out, rejected), by name. */
const FAILED_AGENTS = values<string, [string, number]>(
  (d) => `SELECT a.name FROM jobs j JOIN agents a ON a.id = j.agent_id
   WHERE j.batch_id = ? AND j.status IN ('failed', 'timed_out', 'rejected') ORDER BY a.name${d.byteOrder} LIMIT ?`,
);
/** A chat run's origin, which every job of its batch carries. */
const CHAT_ORIGIN = values<string, [string]>(
  'SELECT chat_origin FROM jobs WHERE batch_id = ? AND chat_origin IS NOT NULL LIMIT 1',
);
const CANCEL_NOT_STARTED = query<{ id: string; agent_id: string | null }, [string, string, string, string]>(
  `UPDATE jobs SET status = 'cancelled', error_message = ?, finished_at = ?, cancel_requested_at = ?
   WHERE batch_id = ? AND status IN ('pending', 'queued') RETURNING id, agent_id`,
);
const UNSETTLED = values<string, [number]>('SELECT id FROM batches WHERE ended_at IS NULL ORDER BY created_at LIMIT ?');

const NO_COUNTS = (): BatchCounts => ({
  pending: 0,
  queued: 0,
  running: 0,
  success: 0,
  failed: 0,
  timed_out: 0,
  cancelled: 0,
  rejected: 0,
});

/**
 * Batches (docs/fleets.md), written once. A batch's admission is one write: on SQLite an
 * operation of the group commit; on PostgreSQL one transaction, with the advisory locks of a
 * single run's admission (the idempotency key, then the token's and each workflow's windows, in
 * one order) and the organization's row for the batch's number.
 */
export function createBatchRepository(
  db: Database,
  decideLimits: DecideLimits,
  planMessages: PlanBatchMessages,
): BatchRepository {
  /**
   * Marks the batch ended when none of its jobs is open (once) and enqueues its chat message in
   * the same write: the trigger's notification, the answer to the chat run that started it.
   */
  function* settle(batchId: string, at: string): Flow<BatchRow | null> {
    const row = yield* one(SETTLE, [at, batchId]);
    if (!row) return null;
    const trigger = yield* one(NOTIFY_OF, [row.trigger_id]);
    if (!trigger) return row;
    const counts = NO_COUNTS();
    for (const c of yield* all(COUNTS, [JSON.stringify([batchId])])) counts[c.status] = c.n;
    const failed = counts.failed + counts.timed_out + counts.rejected;
    const origin = yield* one(CHAT_ORIGIN, [batchId]);
    const notifies =
      trigger.deleted_at === null &&
      trigger.provider !== null &&
      trigger.team_id !== null &&
      trigger.channel_id !== null &&
      trigger.notify_on !== 'none';
    const messages = planMessages(
      {
        orgId: row.org_id,
        batchId,
        number: row.number,
        triggerName: trigger.name,
        workflowName: row.workflow_name,
        jobCount: row.job_count,
        counts,
        failedAgents: failed === 0 ? [] : yield* all(FAILED_AGENTS, [batchId, FAILED_AGENTS_NAMED]),
        notify: notifies
          ? {
              notifyProvider: trigger.provider as ChatProvider,
              notifyTeamId: trigger.team_id as string,
              notifyChannelId: trigger.channel_id as string,
              notifyOn: trigger.notify_on,
            }
          : null,
        chatOrigin: origin ? (JSON.parse(origin) as ChatOrigin) : null,
      },
      at,
    );
    for (const message of messages) yield* run(ENQUEUE_MESSAGE, enqueueParams(message));
    return row;
  }

  function* admission(request: BatchAdmissionRequest): Flow<BatchAdmissionOutcome> {
    const { batch, jobs, now, idempotency, token } = request;
    if (idempotency) {
      yield* lock('idempotency', batch.triggerId, batch.workflowName, idempotency.key);
      const earlier = yield* one(FIND_KEY, [batch.triggerId, batch.workflowName, idempotency.key, batch.createdAt]);
      if (earlier) {
        if (Number(earlier.is_job) === 1) return { outcome: 'idempotency_conflict', usedFor: 'job' };
        return earlier.hash === idempotency.requestHash
          ? { outcome: 'repeated', batchId: earlier.job_id }
          : { outcome: 'idempotency_conflict' };
      }
    }
    if (request.occurrence) {
      // The claim: the occurrence's row, written once whoever tries (its primary key).
      const { scheduledAt, overlap } = request.occurrence;
      const skip = overlap === 'skip' && (yield* one(OPEN_SCHEDULED_BATCH, [batch.triggerId])) !== null;
      const claimed = yield* run(CLAIM_OCCURRENCE, {
        triggerId: batch.triggerId,
        scheduledAt,
        orgId: batch.orgId,
        outcome: skip ? 'skipped' : 'job_created',
        jobId: null,
        batchId: skip ? null : batch.id,
        reason: skip ? 'overlap' : null,
        firstScheduledAt: null,
        recordedAt: batch.createdAt,
      });
      if (claimed === 0) return { outcome: 'claimed_before' };
      if (skip) return { outcome: 'skipped_overlap' };
    }
    // The windows that may be counted, locked in one order before they are read: the token's, then
    // each workflow's by id.
    const limited: { scope: Scope; id: string }[] = [];
    if (token && hasLimit(token.limits)) limited.push({ scope: 'token', id: token.id });
    const workflows = jobs
      .filter((j) => j.rejection === null && j.job.workflowId !== null && hasLimit(j.workflowLimits))
      .map((j) => j.job.workflowId as string)
      .sort();
    for (const id of workflows) limited.push({ scope: 'workflow', id });
    for (const { scope, id } of limited) yield* lock('rate', scope, id);
    const counts = yield* readCounts(limited, now);

    const first = jobs[0]!.job;
    const tokenDecision = decideLimits(
      { job: { ...first, workflowId: '' }, now, idempotency: null, token, workflowLimits: NO_LIMITS },
      counts,
    );
    if (tokenDecision.refused) {
      return { outcome: 'refused', refusal: tokenDecision.refused.refusal, message: tokenDecision.refused.message };
    }
    const { windows } = tokenDecision;
    const counted = [...tokenDecision.counted];

    yield* lockOrg(batch.orgId);
    const stored = yield* one(INSERT_BATCH, { ...batch, jobCount: jobs.length });
    const created: Job[] = [];
    const tuples: BatchJobTuple[] = [];
    let handedOut = 0;
    for (const { job, rejection, workflowLimits } of jobs) {
      let status: 'pending' | 'rejected' = 'pending';
      let message = rejection;
      if (message === null && job.workflowId !== null) {
        const decision = decideLimits(
          { job: { ...job, workflowId: job.workflowId }, now, idempotency: null, token: null, workflowLimits },
          counts,
        );
        if (decision.refused) {
          message = decision.refused.message;
          const { refusal } = decision.refused;
          yield* run(INSERT_BLOCK, [
            job.orgId,
            job.workflowId,
            job.triggerId,
            job.apiTokenId,
            job.id,
            refusal.window,
            refusal.limit,
            refusal.observed,
            batch.createdAt,
          ]);
        } else {
          counted.push(...decision.counted);
        }
      }
      if (message !== null) status = 'rejected';
      const held = status === 'pending' && batch.maxParallel !== null && handedOut >= batch.maxParallel;
      if (status === 'pending' && !held) handedOut += 1;
      const row = { ...job, batchId: batch.id, held };
      tuples.push([
        job.id,
        job.agentId,
        job.workflowId,
        status,
        JSON.stringify(job.params),
        message,
        job.timeoutMs,
        status === 'rejected' ? job.createdAt : null,
        flag(held),
        batch.orgId,
      ]);
      created.push({
        ...row,
        batchId: batch.id,
        status,
        errorMessage: message,
        output: null,
        exitCode: null,
        queuedAt: null,
        startedAt: null,
        finishedAt: status === 'rejected' ? job.createdAt : null,
        deadlineAt: null,
        cancelRequestedAt: null,
        cancelAckedAt: null,
        seq: 0,
        number: 0,
        chatOrigin: job.chatOrigin ?? null,
      });
    }
    yield* rows(
      INSERT_BATCH_JOBS,
      [
        batch.orgId,
        first.source,
        batch.triggerId,
        batch.workflowName,
        first.ref,
        flag(first.debug),
        flag(first.forced),
        first.forceReason,
        first.apiTokenId,
        first.userId,
        batch.createdAt,
        first.chatOrigin ? JSON.stringify(first.chatOrigin) : null,
        batch.id,
      ],
      tuples,
    );
    for (const { scope, id } of counted) yield* run(BUMP_COUNTERS, { scope, id, ...windows });
    if (idempotency) {
      const expiresAt = new Date(now + idempotency.ttlMs).toISOString();
      yield* run(SAVE_KEY, [
        batch.triggerId,
        batch.workflowName,
        idempotency.key,
        idempotency.requestHash,
        batch.id,
        expiresAt,
      ]);
    }
    return { outcome: 'admitted', batch: toBatch(stored!), jobs: created };
  }

  async function withCounts(rows: readonly BatchRow[]): Promise<BatchWithCounts[]> {
    if (rows.length === 0) return [];
    const counts = new Map(rows.map((r) => [r.id, NO_COUNTS()]));
    for (const c of await db.all(COUNTS, [JSON.stringify(rows.map((r) => r.id))])) {
      counts.get(c.batch_id)![c.status] = c.n;
    }
    return rows.map((r) => ({ ...toBatch(r), counts: counts.get(r.id)! }));
  }
  const oneWithCounts = async (row: BatchRow | null) => (row ? (await withCounts([row]))[0]! : null);

  return {
    admit(request) {
      if (request.jobs.length === 0) throw new Error('a batch has at least one job');
      return db.write(() => admission(request));
    },
    async findInOrg(orgId, id) {
      return oneWithCounts(await db.one(IN_ORG, [orgId, id]));
    },
    async findById(id) {
      return oneWithCounts(await db.one(BY_ID, [id]));
    },
    async listByOrg(orgId, q) {
      const before = q.beforeNumber ?? Number.MAX_SAFE_INTEGER;
      return withCounts(
        await (q.triggerId === undefined
          ? db.all(PAGE, [orgId, before, q.limit])
          : db.all(TRIGGER_PAGE, [orgId, q.triggerId, before, q.limit])),
      );
    },
    async jobs(batchId) {
      return (await db.all(JOBS, [batchId])).map(toJob);
    },
    openJobIds(batchId) {
      return db.all(OPEN_JOB_IDS, [batchId]);
    },
    release(batchId) {
      return db.write(function* (): Flow<Job[]> {
        yield* lock('batch', batchId);
        const max = yield* one(MAX_PARALLEL, [batchId]);
        if (max === null) return [];
        const free = max - ((yield* one(HANDED_OUT, [batchId])) ?? 0);
        if (free <= 0) return [];
        return (yield* all(RELEASE, [batchId, free])).map(toJob);
      });
    },
    async settle(batchId, at) {
      return oneWithCounts(await db.write(() => settle(batchId, at)));
    },
    async cancelNotStarted(batchId, at, message) {
      const rows = await db.write(() => all(CANCEL_NOT_STARTED, [message, at, at, batchId]));
      return rows.map((r) => ({ id: r.id, agentId: r.agent_id }));
    },
    listUnsettled(limit) {
      return db.all(UNSETTLED, [limit]);
    },
  };
}

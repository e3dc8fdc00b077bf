import { isTerminalJobStatus } from '@drover/shared';
import type { PlanJobMessages } from '../../../domain/model/chat-outbox.js';
import type {
  JobChange,
  JobLogLineRecord,
  JobMove,
  JobRepository,
  OpenJobSummary,
  PlanJobMove,
  TransitionResult,
} from '../../../domain/model/jobs.js';
import type { PgClient, PgPool, Queryable } from '../pool.js';
import { all, one, run } from '../rows.js';
import { inTransaction } from '../transaction.js';
import { createOutboxWrites } from './chat-outbox.js';
import { toJob, type JobRow } from './job-rows.js';

const OPEN = `('pending', 'queued', 'running')`;

/** Writes the change; the job's row is locked by the caller, the status guard stays as on SQLite. */
function write(db: Queryable, id: string, c: JobChange): Promise<number> {
  if ('cancel' in c) {
    if (c.cancel === 'now') {
      return run(
        db,
        `UPDATE jobs SET status = 'cancelled', error_message = $2, finished_at = $3, cancel_requested_at = $3
         WHERE id = $1 AND status IN ('pending', 'queued')`,
        [id, c.errorMessage, c.at],
      );
    }
    return run(
      db,
      `UPDATE jobs SET cancel_requested_at = $2, deadline_at = $3
       WHERE id = $1 AND status = 'running' AND cancel_requested_at IS NULL`,
      [id, c.at, c.deadlineAt],
    );
  }
  switch (c.status) {
    case 'queued':
      return run(
        db,
        "UPDATE jobs SET status = 'queued', queued_at = $2, deadline_at = $3 WHERE id = $1 AND status = 'pending'",
        [id, c.at, c.deadlineAt],
      );
    case 'running':
      return run(
        db,
        `UPDATE jobs SET status = 'running', started_at = $2, deadline_at = $3
         WHERE id = $1 AND status IN ('pending', 'queued')`,
        [id, c.at, c.deadlineAt],
      );
    case 'rejected':
      return run(
        db,
        "UPDATE jobs SET status = 'rejected', error_message = $2, finished_at = $3 WHERE id = $1 AND status = 'pending'",
        [id, c.errorMessage, c.at],
      );
    default:
      return run(
        db,
        `UPDATE jobs SET status = $2, exit_code = $3, error_message = $4, output = $5, finished_at = $6
         WHERE id = $1 AND status IN ${OPEN}`,
        [id, c.status, c.exitCode, c.errorMessage, JSON.stringify(c.output), c.finishedAt],
      );
  }
}

const byId = async (db: Queryable, id: string) =>
  toJob((await one<JobRow>(db, 'SELECT * FROM jobs WHERE id = $1', [id]))!);

/**
 * `planMove` decides the agents' reports (the domain's planJobMove); `planMessages` whether a
 * job that ended posts to chat (planJobMessages). A move locks the job's row (`FOR UPDATE`)
 * before the domain decides, so reports and cancels reaching two coordinators at once are
 * decided one after the other, and a terminal status is written exactly once. The sweeps are
 * single UPDATEs whose conditions PostgreSQL checks again on a row another transaction changed.
 */
export function createJobRepository(pool: PgPool, planMove: PlanJobMove, planMessages: PlanJobMessages): JobRepository {
  const jobsEnded = createOutboxWrites(planMessages);

  const move = (m: JobMove) =>
    inTransaction(pool, async (tx: PgClient): Promise<TransitionResult> => {
      const row = await one<JobRow>(tx, 'SELECT * FROM jobs WHERE id = $1 AND agent_id = $2 FOR UPDATE', [
        m.jobId,
        m.agentId,
      ]);
      if (!row) return { outcome: 'not_found' };
      const job = toJob(row);
      const plan = planMove(job, m);
      const ackCancel = () =>
        run(
          tx,
          'UPDATE jobs SET cancel_acked_at = $2 WHERE id = $1 AND cancel_requested_at IS NOT NULL AND cancel_acked_at IS NULL',
          [job.id, m.at],
        );
      if (plan.decision !== 'apply') {
        if (!plan.confirmsCancel) return { outcome: plan.decision, job };
        await ackCancel();
        return { outcome: plan.decision, job: await byId(tx, job.id) };
      }
      if ((await write(tx, job.id, plan.change)) === 1) {
        if (plan.confirmsCancel) await ackCancel();
        const moved = await byId(tx, job.id);
        if (isTerminalJobStatus(moved.status)) await jobsEnded(tx, [moved.id], m.at);
        return { outcome: 'applied', job: moved };
      }
      const now = await byId(tx, job.id);
      return { outcome: planMove(now, m).decision === 'unchanged' ? 'unchanged' : 'conflict', job: now };
    });

  /** An UPDATE ... RETURNING id that ends jobs, with their chat messages, in one transaction. */
  const endMany = (sql: string, values: unknown[], at: string) =>
    inTransaction(pool, async (tx) => {
      const ids = (await all<{ id: string }>(tx, sql, values)).map((r) => r.id);
      await jobsEnded(tx, ids, at);
      return ids;
    });

  return {
    async findById(id) {
      const row = await one<JobRow>(pool, 'SELECT * FROM jobs WHERE id = $1', [id]);
      return row ? toJob(row) : null;
    },
    async findByIds(ids) {
      if (ids.length === 0) return [];
      return (await all<JobRow>(pool, 'SELECT * FROM jobs WHERE id = ANY($1::text[])', [ids])).map(toJob);
    },
    async findInOrg(orgId, id) {
      const row = await one<JobRow>(pool, 'SELECT * FROM jobs WHERE org_id = $1 AND id = $2', [orgId, id]);
      return row ? toJob(row) : null;
    },
    async listTriggerJobs(orgId, q) {
      let before = q.beforeSeq ?? Number.MAX_SAFE_INTEGER;
      let after = 0;
      // A creation-time range as the window of creation numbers (seq) that holds all its jobs:
      // exact whatever the clock did (seq and created_at need not be in the same order).
      if (q.createdBefore !== undefined) {
        const last = await one<{ seq: number | null }>(
          pool,
          'SELECT max(seq) AS seq FROM jobs WHERE org_id = $1 AND created_at < $2',
          [orgId, q.createdBefore],
        );
        if (last?.seq == null) return [];
        before = Math.min(before, last.seq + 1);
      }
      if (q.createdAfter !== undefined) {
        const first = await one<{ seq: number | null }>(
          pool,
          'SELECT min(seq) AS seq FROM jobs WHERE org_id = $1 AND created_at >= $2',
          [orgId, q.createdAfter],
        );
        if (first?.seq == null) return [];
        after = first.seq;
      }
      const rows = await all<JobRow>(
        pool,
        `SELECT * FROM jobs WHERE org_id = $1 AND kind = 'trigger'
           AND ($2::text IS NULL OR trigger_id = $2) AND ($3::text IS NULL OR agent_id = $3)
           AND ($4::text IS NULL OR status = $4) AND ($5::text IS NULL OR source = $5)
           AND ($6::timestamptz IS NULL OR created_at >= $6) AND ($7::timestamptz IS NULL OR created_at < $7)
           AND seq < $8 AND seq >= $9 ORDER BY seq DESC LIMIT $10`,
        [
          orgId,
          q.triggerId ?? null,
          q.agentId ?? null,
          q.status ?? null,
          q.source ?? null,
          q.createdAfter ?? null,
          q.createdBefore ?? null,
          before,
          after,
          q.limit,
        ],
      );
      return rows.map(toJob);
    },
    async listOpenForAgent(agentId) {
      const rows = await all<JobRow>(
        pool,
        `SELECT * FROM jobs WHERE agent_id = $1 AND status IN ${OPEN} ORDER BY seq ASC`,
        [agentId],
      );
      return rows.map(toJob);
    },
    async listOpenOfAgents(agentIds) {
      if (agentIds.length === 0) return [];
      return all<OpenJobSummary>(
        pool,
        `SELECT id, agent_id AS "agentId", status, created_at AS "createdAt",
           (cancel_requested_at IS NOT NULL AND cancel_acked_at IS NULL) AS "cancelUnconfirmed"
         FROM jobs WHERE agent_id = ANY($1::text[]) AND status IN ${OPEN} ORDER BY seq ASC`,
        [agentIds],
      );
    },
    async listUnconfirmedCancels(agentId) {
      const rows = await all<{ id: string }>(
        pool,
        `SELECT id FROM jobs WHERE agent_id = $1 AND cancel_requested_at IS NOT NULL AND cancel_acked_at IS NULL
         ORDER BY seq ASC`,
        [agentId],
      );
      return rows.map((r) => r.id);
    },
    listLogs(jobId, afterSeq, limit) {
      return all<JobLogLineRecord>(
        pool,
        'SELECT seq, at, stream, step, text FROM job_logs WHERE job_id = $1 AND seq > $2 ORDER BY seq LIMIT $3',
        [jobId, afterSeq, limit],
      );
    },
    accept(agentId, jobId, time) {
      return move({ move: 'accept', agentId, jobId, ...time });
    },
    reject(agentId, jobId, errorMessage, at) {
      return move({ move: 'reject', agentId, jobId, errorMessage, at });
    },
    start(agentId, jobId, time) {
      return move({ move: 'start', agentId, jobId, ...time });
    },
    finish(agentId, jobId, report, at) {
      return move({ move: 'finish', agentId, jobId, report, at });
    },
    cancel(agentId, jobId, request) {
      return move({ move: 'cancel', agentId, jobId, ...request });
    },
    async appendLogs(agentId, jobId, lines) {
      const row = await one<JobRow>(pool, 'SELECT * FROM jobs WHERE id = $1 AND agent_id = $2', [jobId, agentId]);
      if (!row) return null;
      if (lines.length === 0) return { job: toJob(row), accepted: 0 };
      // One statement for the batch; a line whose (job, seq) is stored already is skipped.
      const accepted = await run(
        pool,
        `INSERT INTO job_logs (job_id, seq, at, stream, step, text)
         SELECT $1, * FROM unnest($2::integer[], $3::timestamptz[], $4::text[], $5::integer[], $6::text[])
         ON CONFLICT (job_id, seq) DO NOTHING`,
        [
          jobId,
          lines.map((l) => l.seq),
          lines.map((l) => l.at),
          lines.map((l) => l.stream),
          lines.map((l) => l.step ?? null),
          lines.map((l) => l.text),
        ],
      );
      return { job: toJob(row), accepted };
    },
    failOverdue(now, message) {
      return endMany(
        `UPDATE jobs SET status = 'failed', error_message = $2, finished_at = $1
         WHERE status IN ('queued', 'running') AND deadline_at IS NOT NULL AND deadline_at < $1
           AND (status = 'running' OR agent_id NOT IN (SELECT id FROM agents WHERE status = 'connected'))
         RETURNING id`,
        [now, message],
        now,
      );
    },
    cancelOverdue(now, message) {
      return endMany(
        `UPDATE jobs SET status = 'cancelled', error_message = $2, finished_at = $1
         WHERE status = 'running' AND cancel_requested_at IS NOT NULL AND deadline_at IS NOT NULL
           AND deadline_at < $1
         RETURNING id`,
        [now, message],
        now,
      );
    },
    failOpenOfAgent(agentId, message, at) {
      return endMany(
        `UPDATE jobs SET status = 'failed', error_message = $2, finished_at = $3
         WHERE agent_id = $1 AND status IN ${OPEN} RETURNING id`,
        [agentId, message, at],
        at,
      );
    },
  };
}

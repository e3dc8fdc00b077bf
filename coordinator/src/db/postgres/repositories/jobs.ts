import { isTerminalJobStatus } from '@drover/shared';
import type { PlanJobMessages } from '../../../domain/model/chat-outbox.js';
import type {
  AppendLogsResult,
  JobChange,
  JobLogLineRecord,
  JobLogSummary,
  JobMove,
  JobRepository,
  LogCap,
  NewLogLine,
  OpenJobSummary,
  PlanJobMove,
  TransitionResult,
} from '../../../domain/model/jobs.js';
import type { PgClient, PgPool, Queryable } from '../pool.js';
import { all, one, run } from '../rows.js';
import { inTransaction } from '../transaction.js';
import { jobsEnded as endedFlow } from '../../repositories/job-messages.js';
import { runFlow } from '../../sql/postgres.js';
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

/** A job's row of `job_log_usage` (migrations/postgres/0003_job_log_cap.sql). */
interface LogUsage {
  lines: number;
  bytes: number;
  gap_first_seq: number | null;
  gap_last_seq: number | null;
  dropped_lines: number;
  dropped_bytes: number;
}

const NO_LOG: LogUsage = {
  lines: 0,
  bytes: 0,
  gap_first_seq: null,
  gap_last_seq: null,
  dropped_lines: 0,
  dropped_bytes: 0,
};

/**
 * A line the cap has passed: once it dropped lines, the head and the gap are settled, and a line
 * not newer than the gap is ignored (a resend of a dropped line, or one come too late for its place).
 */
const beforeGapEnd = (u: LogUsage, seq: number): boolean => u.gap_last_seq !== null && seq <= u.gap_last_seq;

const textBytes = (text: string): number => Buffer.byteLength(text, 'utf8');

/** How many lines' sizes one read of the cap's walk takes. */
const WALK_CHUNK = 500;

/** The job's lines from `seq` on, oldest first, with their text's size (never the text), a chunk at a time. */
async function* linesFrom(db: Queryable, jobId: string, seq: number) {
  for (let from = seq; ;) {
    const chunk = await all<{ seq: number; at: string; bytes: number }>(
      db,
      `SELECT seq, at, octet_length(text) AS bytes FROM job_logs WHERE job_id = $1 AND seq >= $2
       ORDER BY seq LIMIT $3`,
      [jobId, from, WALK_CHUNK],
    );
    yield* chunk;
    if (chunk.length < WALK_CHUNK) return;
    from = chunk[chunk.length - 1]!.seq + 1;
  }
}

/**
 * Brings a log over its cap back under it (docs/jobs.md, "Log lines"), as on SQLite
 * (db/repositories/jobs.ts): the head stays, the oldest lines after it are deleted until the rest
 * fits, and one line at the last dropped seq says how many were dropped in all. The caller holds
 * the job's row lock.
 */
async function cutLog(tx: Queryable, jobId: string, usage: LogUsage, cap: LogCap): Promise<LogUsage> {
  let from: number | null = null;
  let gapLine: { seq: number; bytes: number } | null = null;
  if (usage.gap_last_seq === null) {
    let head = 0;
    for await (const line of linesFrom(tx, jobId, 0)) {
      head += line.bytes;
      if (head > cap.headBytes) {
        from = line.seq;
        break;
      }
    }
  } else {
    const stored = await one<{ bytes: number }>(
      tx,
      'SELECT octet_length(text) AS bytes FROM job_logs WHERE job_id = $1 AND seq = $2',
      [jobId, usage.gap_last_seq],
    );
    if (stored) gapLine = { seq: usage.gap_last_seq, bytes: stored.bytes };
    from = usage.gap_last_seq + 1;
  }
  if (from === null) return usage;
  const dropped = { lines: usage.dropped_lines, bytes: usage.dropped_bytes };
  const kept = () => usage.bytes - (dropped.bytes - usage.dropped_bytes) - (gapLine?.bytes ?? 0);
  const fits = () => kept() + textBytes(cap.gapText(dropped)) <= cap.maxBytes;
  let first: number | null = null;
  let last: { seq: number; at: string } | null = null;
  for await (const line of linesFrom(tx, jobId, from)) {
    if (fits()) break;
    first ??= line.seq;
    last = line;
    dropped.lines += 1;
    dropped.bytes += line.bytes;
  }
  if (first === null || last === null) return usage;
  await run(tx, 'DELETE FROM job_logs WHERE job_id = $1 AND seq >= $2 AND seq <= $3', [jobId, first, last.seq]);
  if (gapLine) await run(tx, 'DELETE FROM job_logs WHERE job_id = $1 AND seq = $2', [jobId, gapLine.seq]);
  const text = cap.gapText(dropped);
  await run(tx, "INSERT INTO job_logs (job_id, seq, at, stream, step, text) VALUES ($1, $2, $3, 'system', NULL, $4)", [
    jobId,
    last.seq,
    last.at,
    text,
  ]);
  return {
    lines: usage.lines - (dropped.lines - usage.dropped_lines) - (gapLine ? 1 : 0) + 1,
    bytes: kept() + textBytes(text),
    gap_first_seq: usage.gap_first_seq ?? first,
    gap_last_seq: last.seq,
    dropped_lines: dropped.lines,
    dropped_bytes: dropped.bytes,
  };
}

/**
 * Stores a batch of an open job's lines and applies the cap. The job's row is locked first, so a
 * batch and the job's finish (or another batch, through another coordinator) are one after the
 * other: a job that ended takes no more lines, and the counts stay exact.
 */
function appendLogs(
  pool: PgPool,
  agentId: string,
  jobId: string,
  lines: readonly NewLogLine[],
  cap: LogCap,
): Promise<AppendLogsResult> {
  return inTransaction(pool, async (tx) => {
    const row = await one<JobRow>(tx, 'SELECT * FROM jobs WHERE id = $1 AND agent_id = $2 FOR NO KEY UPDATE', [
      jobId,
      agentId,
    ]);
    if (!row) return { outcome: 'not_found' };
    const job = toJob(row);
    if (isTerminalJobStatus(job.status)) return { outcome: 'ended', job };
    const before = (await one<LogUsage>(tx, 'SELECT * FROM job_log_usage WHERE job_id = $1', [jobId])) ?? NO_LOG;
    const fresh = lines.filter((l) => !beforeGapEnd(before, l.seq));
    if (fresh.length === 0) return { outcome: 'stored', job, accepted: 0 };
    // One statement for the batch; a line whose (job, seq) is stored already is skipped.
    const inserted = await all<{ bytes: number }>(
      tx,
      `INSERT INTO job_logs (job_id, seq, at, stream, step, text)
       SELECT $1, * FROM unnest($2::integer[], $3::timestamptz[], $4::text[], $5::integer[], $6::text[])
       ON CONFLICT (job_id, seq) DO NOTHING
       RETURNING octet_length(text) AS bytes`,
      [
        jobId,
        fresh.map((l) => l.seq),
        fresh.map((l) => l.at),
        fresh.map((l) => l.stream),
        fresh.map((l) => l.step ?? null),
        fresh.map((l) => l.text),
      ],
    );
    if (inserted.length === 0) return { outcome: 'stored', job, accepted: 0 };
    let usage: LogUsage = {
      ...before,
      lines: before.lines + inserted.length,
      bytes: before.bytes + inserted.reduce((sum, r) => sum + r.bytes, 0),
    };
    if (usage.bytes > cap.maxBytes) usage = await cutLog(tx, jobId, usage, cap);
    await run(
      tx,
      `INSERT INTO job_log_usage (job_id, lines, bytes, gap_first_seq, gap_last_seq, dropped_lines, dropped_bytes)
       VALUES ($1, $2, $3, $4, $5, $6, $7)
       ON CONFLICT (job_id) DO UPDATE SET lines = excluded.lines, bytes = excluded.bytes,
         gap_first_seq = excluded.gap_first_seq, gap_last_seq = excluded.gap_last_seq,
         dropped_lines = excluded.dropped_lines, dropped_bytes = excluded.dropped_bytes`,
      [
        jobId,
        usage.lines,
        usage.bytes,
        usage.gap_first_seq,
        usage.gap_last_seq,
        usage.dropped_lines,
        usage.dropped_bytes,
      ],
    );
    return { outcome: 'stored', job, accepted: inserted.length };
  });
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
  /** The chat messages of jobs that ended, in the transaction that ends them (job-messages.ts). */
  const jobsEnded = (tx: Queryable, ids: readonly string[], at: string) =>
    runFlow(tx, endedFlow(planMessages, ids, at));

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
    async listLogs(jobId, { afterSeq, limit, maxBytes }) {
      // The sizes first (never the text), then the lines of the page alone: a page stops at its
      // bytes without the text of what follows it reaching this process.
      const sizes = await all<{ seq: number; bytes: number }>(
        pool,
        'SELECT seq, octet_length(text) AS bytes FROM job_logs WHERE job_id = $1 AND seq > $2 ORDER BY seq LIMIT $3',
        [jobId, afterSeq, limit + 1],
      );
      let bytes = 0;
      let end = 0;
      while (end < sizes.length && end < limit) {
        bytes += sizes[end]!.bytes;
        if (end > 0 && bytes > maxBytes) break;
        end += 1;
      }
      const more = sizes.length > end;
      if (end === 0) return { lines: [], more };
      const lines = await all<JobLogLineRecord>(
        pool,
        `SELECT seq, at, stream, step, text FROM job_logs WHERE job_id = $1 AND seq > $2 AND seq <= $3
         ORDER BY seq`,
        [jobId, afterSeq, sizes[end - 1]!.seq],
      );
      return { lines, more };
    },
    async logSummary(jobId) {
      const row = await one<JobLogSummary>(
        pool,
        `SELECT lines, bytes, dropped_lines AS "droppedLines", dropped_bytes AS "droppedBytes"
         FROM job_log_usage WHERE job_id = $1`,
        [jobId],
      );
      return row ?? { lines: 0, bytes: 0, droppedLines: 0, droppedBytes: 0 };
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
    appendLogs(agentId, jobId, lines, cap) {
      return appendLogs(pool, agentId, jobId, lines, cap);
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

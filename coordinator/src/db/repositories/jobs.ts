import { isTerminalJobStatus } from '@drover/shared';
import type { PlanJobMessages } from '../../domain/model/chat-outbox.js';
import type {
  AppendLogsResult,
  CancelRequest,
  JobChange,
  JobLogLineRecord,
  JobLogSummary,
  JobMove,
  JobRepository,
  LogCap,
  NewLogLine,
  OpenJobStatus,
  PlanJobMove,
  TransitionResult,
} from '../../domain/model/jobs.js';
import type { WriteExecutor } from '../writer/executor.js';
import type { SqliteDatabase } from '../sql/sqlite.js';
import { jobsEnded } from './job-messages.js';
import { toJob, type JobRow } from './job-rows.js';

interface OpenSummaryRow {
  id: string;
  agent_id: string;
  status: OpenJobStatus;
  created_at: string;
  cancel_unconfirmed: number;
}

/** A job's row of `job_log_usage` (migrations/0021_job_log_cap.sql). */
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

const OPEN_STATUSES: Record<OpenJobStatus, true> = { pending: true, queued: true, running: true };
/** The open statuses as an SQL list. */
const OPEN = Object.keys(OPEN_STATUSES)
  .map((s) => `'${s}'`)
  .join(', ');

/**
 * The job writes as operations of the group commit (db/writer/executor.ts). Operations run
 * serially, so a move reads the job, lets the domain decide (`planMove`, run inside the
 * operation) and applies the change with a conditional UPDATE on one state; the
 * `WHERE status IN (...)` still guards writers outside this process. Every write that ends a
 * job enqueues its chat notification in the same operation (job-messages.ts).
 */
function createJobWrites(database: SqliteDatabase, planMove: PlanJobMove, planMessages: PlanJobMessages) {
  const { db } = database;
  const outbox = {
    jobsEnded: (ids: readonly string[], at: string) => database.runSync(jobsEnded(planMessages, ids, at)),
  };
  const byId = db.prepare<[string], JobRow>('SELECT * FROM jobs WHERE id = ?');
  const ofAgent = db.prepare<[string, string], JobRow>('SELECT * FROM jobs WHERE id = ? AND agent_id = ?');
  const toQueued = db.prepare(
    "UPDATE jobs SET status = 'queued', queued_at = @at, deadline_at = @deadline WHERE id = @id AND status = 'pending'",
  );
  const toRejected = db.prepare(
    `UPDATE jobs SET status = 'rejected', error_message = @message, finished_at = @at
       WHERE id = @id AND status = 'pending'`,
  );
  const toRunning = db.prepare(
    `UPDATE jobs SET status = 'running', started_at = @at, deadline_at = @deadline
       WHERE id = @id AND status IN ('pending', 'queued')`,
  );
  const toFinished = db.prepare(
    `UPDATE jobs SET status = @status, exit_code = @exitCode, error_message = @errorMessage, output = @output,
       finished_at = @finishedAt WHERE id = @id AND status IN (${OPEN})`,
  );
  const toCancelled = db.prepare(
    `UPDATE jobs SET status = 'cancelled', error_message = @message, finished_at = @at, cancel_requested_at = @at
       WHERE id = @id AND status IN ('pending', 'queued')`,
  );
  const cancelRequested = db.prepare(
    `UPDATE jobs SET cancel_requested_at = @at, deadline_at = @deadline
       WHERE id = @id AND status = 'running' AND cancel_requested_at IS NULL`,
  );
  const cancelAcked = db.prepare(
    'UPDATE jobs SET cancel_acked_at = @at WHERE id = @id AND cancel_requested_at IS NOT NULL AND cancel_acked_at IS NULL',
  );
  const insertLog = db.prepare(
    'INSERT OR IGNORE INTO job_logs (job_id, seq, at, stream, step, text) VALUES (?, ?, ?, ?, ?, ?)',
  );
  const logUsage = db.prepare<[string], LogUsage>('SELECT * FROM job_log_usage WHERE job_id = ?');
  const saveLogUsage = db.prepare(
    `INSERT INTO job_log_usage (job_id, lines, bytes, gap_first_seq, gap_last_seq, dropped_lines, dropped_bytes)
       VALUES (@job_id, @lines, @bytes, @gap_first_seq, @gap_last_seq, @dropped_lines, @dropped_bytes)
       ON CONFLICT (job_id) DO UPDATE SET lines = excluded.lines, bytes = excluded.bytes,
         gap_first_seq = excluded.gap_first_seq, gap_last_seq = excluded.gap_last_seq,
         dropped_lines = excluded.dropped_lines, dropped_bytes = excluded.dropped_bytes`,
  );
  /** The job's lines from `seq` on, oldest first, with their text's size (never the text). */
  const linesFrom = db.prepare<[string, number], { seq: number; at: string; bytes: number }>(
    'SELECT seq, at, length(CAST(text AS BLOB)) AS bytes FROM job_logs WHERE job_id = ? AND seq >= ? ORDER BY seq',
  );
  const deleteLogs = db.prepare('DELETE FROM job_logs WHERE job_id = ? AND seq >= ? AND seq <= ?');
  const insertGapLine = db.prepare(
    "INSERT INTO job_logs (job_id, seq, at, stream, step, text) VALUES (?, ?, ?, 'system', NULL, ?)",
  );
  const overdue = db.prepare<[{ now: string; message: string }], { id: string }>(
    `UPDATE jobs SET status = 'failed', error_message = @message, finished_at = @now
       WHERE status IN ('queued', 'running') AND deadline_at IS NOT NULL AND deadline_at < @now
         AND (status = 'running' OR agent_id NOT IN (SELECT id FROM agents WHERE status = 'connected'))
       RETURNING id`,
  );
  const overdueCancels = db.prepare<[{ now: string; message: string }], { id: string }>(
    `UPDATE jobs SET status = 'cancelled', error_message = @message, finished_at = @now
       WHERE status = 'running' AND cancel_requested_at IS NOT NULL AND deadline_at IS NOT NULL AND deadline_at < @now
       RETURNING id`,
  );
  const openOfAgentFailed = db.prepare<[{ agentId: string; message: string; at: string }], { id: string }>(
    `UPDATE jobs SET status = 'failed', error_message = @message, finished_at = @at
       WHERE agent_id = @agentId AND status IN (${OPEN}) RETURNING id`,
  );

  /**
   * Brings a log over its cap back under it (docs/jobs.md, "Log lines"): the head (the first
   * lines within `cap.headBytes`) stays, the oldest lines after it are deleted until the rest
   * fits, and one line at the last dropped seq says how many were dropped in all (replacing the
   * one a previous cut left). Reads only the lines it deletes, and the head at the first cut.
   */
  const cutLog = (jobId: string, usage: LogUsage, cap: LogCap): LogUsage => {
    let from: number | null = null;
    let gapLine: { seq: number; bytes: number } | null = null;
    if (usage.gap_last_seq === null) {
      let head = 0;
      for (const line of linesFrom.iterate(jobId, 0)) {
        head += line.bytes;
        if (head > cap.headBytes) {
          from = line.seq;
          break;
        }
      }
    } else {
      const stored = linesFrom.get(jobId, usage.gap_last_seq);
      if (stored?.seq === usage.gap_last_seq) gapLine = { seq: stored.seq, bytes: stored.bytes };
      from = usage.gap_last_seq + 1;
    }
    if (from === null) return usage;
    const dropped = { lines: usage.dropped_lines, bytes: usage.dropped_bytes };
    const kept = () => usage.bytes - (dropped.bytes - usage.dropped_bytes) - (gapLine?.bytes ?? 0);
    const fits = () => kept() + textBytes(cap.gapText(dropped)) <= cap.maxBytes;
    let first: number | null = null;
    let last: { seq: number; at: string } | null = null;
    for (const line of linesFrom.iterate(jobId, from)) {
      if (fits()) break;
      first ??= line.seq;
      last = line;
      dropped.lines += 1;
      dropped.bytes += line.bytes;
    }
    if (first === null || last === null) return usage;
    deleteLogs.run(jobId, first, last.seq);
    if (gapLine) deleteLogs.run(jobId, gapLine.seq, gapLine.seq);
    const text = cap.gapText(dropped);
    insertGapLine.run(jobId, last.seq, last.at, text);
    return {
      lines: usage.lines - (dropped.lines - usage.dropped_lines) - (gapLine ? 1 : 0) + 1,
      bytes: kept() + textBytes(text),
      gap_first_seq: usage.gap_first_seq ?? first,
      gap_last_seq: last.seq,
      dropped_lines: dropped.lines,
      dropped_bytes: dropped.bytes,
    };
  };

  /** Writes the change if the job is still in a status it applies from; 1 when it did. */
  const write = (id: string, c: JobChange): number => {
    if ('cancel' in c) {
      if (c.cancel === 'now') return toCancelled.run({ id, message: c.errorMessage, at: c.at }).changes;
      return cancelRequested.run({ id, at: c.at, deadline: c.deadlineAt }).changes;
    }
    switch (c.status) {
      case 'queued':
        return toQueued.run({ id, at: c.at, deadline: c.deadlineAt }).changes;
      case 'running':
        return toRunning.run({ id, at: c.at, deadline: c.deadlineAt }).changes;
      case 'rejected':
        return toRejected.run({ id, message: c.errorMessage, at: c.at }).changes;
      default:
        return toFinished.run({
          id,
          status: c.status,
          exitCode: c.exitCode,
          errorMessage: c.errorMessage,
          output: JSON.stringify(c.output),
          finishedAt: c.finishedAt,
        }).changes;
    }
  };

  return {
    move(m: JobMove): TransitionResult {
      const row = ofAgent.get(m.jobId, m.agentId);
      if (!row) return { outcome: 'not_found' };
      const job = toJob(row);
      const plan = planMove(job, m);
      if (plan.decision !== 'apply') {
        if (!plan.confirmsCancel) return { outcome: plan.decision, job };
        cancelAcked.run({ id: job.id, at: m.at });
        return { outcome: plan.decision, job: toJob(byId.get(m.jobId) as JobRow) };
      }
      if (write(job.id, plan.change) === 1) {
        if (plan.confirmsCancel) cancelAcked.run({ id: job.id, at: m.at });
        const moved = toJob(byId.get(m.jobId) as JobRow);
        if (isTerminalJobStatus(moved.status)) outbox.jobsEnded([moved.id], m.at);
        return { outcome: 'applied', job: moved };
      }
      // Changed by another writer between the read and the UPDATE: decide again on what it wrote.
      const now = toJob(byId.get(m.jobId) as JobRow);
      return { outcome: planMove(now, m).decision === 'unchanged' ? 'unchanged' : 'conflict', job: now };
    },
    appendLogs(a: { agentId: string; jobId: string; lines: readonly NewLogLine[]; cap: LogCap }): AppendLogsResult {
      const row = ofAgent.get(a.jobId, a.agentId);
      if (!row) return { outcome: 'not_found' };
      const job = toJob(row);
      if (isTerminalJobStatus(job.status)) return { outcome: 'ended', job };
      const before = logUsage.get(a.jobId) ?? NO_LOG;
      let usage = before;
      let accepted = 0;
      for (const l of a.lines) {
        if (beforeGapEnd(before, l.seq)) continue;
        if (insertLog.run(a.jobId, l.seq, l.at, l.stream, l.step ?? null, l.text).changes === 0) continue;
        accepted += 1;
        usage = { ...usage, lines: usage.lines + 1, bytes: usage.bytes + textBytes(l.text) };
      }
      if (usage.bytes > a.cap.maxBytes) usage = cutLog(a.jobId, usage, a.cap);
      if (usage !== before) saveLogUsage.run({ job_id: a.jobId, ...usage });
      return { outcome: 'stored', job, accepted };
    },
    failOverdue({ now, message }: { now: string; message: string }): string[] {
      const ids = overdue.all({ now, message }).map((r) => r.id);
      outbox.jobsEnded(ids, now);
      return ids;
    },
    cancelOverdue({ now, message }: { now: string; message: string }): string[] {
      const ids = overdueCancels.all({ now, message }).map((r) => r.id);
      outbox.jobsEnded(ids, now);
      return ids;
    },
    failOpenOfAgent({ agentId, message, at }: { agentId: string; message: string; at: string }): string[] {
      const ids = openOfAgentFailed.all({ agentId, message, at }).map((r) => r.id);
      outbox.jobsEnded(ids, at);
      return ids;
    },
  };
}

/**
 * `planMove` decides the agents' reports (the domain's planJobMove); `planMessages` whether a
 * job that ended posts to chat (planJobMessages).
 */
export function createJobRepository(
  database: SqliteDatabase,
  writes: WriteExecutor,
  planMove: PlanJobMove,
  planMessages: PlanJobMessages,
): JobRepository {
  const { db } = database;
  const w = createJobWrites(database, planMove, planMessages);
  const byId = db.prepare<[string], JobRow>('SELECT * FROM jobs WHERE id = ?');
  const inOrg = db.prepare<[string, string], JobRow>('SELECT * FROM jobs WHERE org_id = ? AND id = ?');
  const byIds = db.prepare<[string], JobRow>('SELECT * FROM jobs WHERE id IN (SELECT value FROM json_each(?))');
  type ListParams = {
    orgId: string;
    status: string | null;
    triggerId: string | null;
    agentId: string | null;
    source: string | null;
    createdAfter: string | null;
    createdBefore: string | null;
    before: number;
    after: number;
    limit: number;
  };
  // One query per index that leads the scan (the trigger's, the agent's, or the organization's);
  // every other filter is a nullable parameter, so the SQL text is fixed.
  const listWhere = (leading: string) =>
    `SELECT * FROM jobs WHERE ${leading}org_id = @orgId AND kind = 'trigger'
       AND (@triggerId IS NULL OR trigger_id = @triggerId) AND (@agentId IS NULL OR agent_id = @agentId)
       AND (@status IS NULL OR status = @status) AND (@source IS NULL OR source = @source)
       AND (@createdAfter IS NULL OR created_at >= @createdAfter)
       AND (@createdBefore IS NULL OR created_at < @createdBefore)
       AND seq < @before AND seq >= @after ORDER BY seq DESC LIMIT @limit`;
  const list = db.prepare<[ListParams], JobRow>(listWhere(''));
  // A creation-time range as the window of creation numbers (seq) that holds all its jobs, read
  // from the (org_id, created_at) index alone: the list's scan starts and stops at the range
  // instead of walking every newer (or older) job. Exact whatever the clock did: seq and
  // created_at need not be in the same order, the bounds are the max and min over the range.
  // INDEXED BY: left alone, the planner answers min/max(seq) by walking jobs_org_seq row by row.
  const lastSeqBefore = db.prepare<[{ orgId: string; at: string }], { seq: number | null }>(
    'SELECT max(seq) AS seq FROM jobs INDEXED BY jobs_org_created WHERE org_id = @orgId AND created_at < @at',
  );
  const firstSeqFrom = db.prepare<[{ orgId: string; at: string }], { seq: number | null }>(
    'SELECT min(seq) AS seq FROM jobs INDEXED BY jobs_org_created WHERE org_id = @orgId AND created_at >= @at',
  );
  const listByTrigger = db.prepare<[ListParams], JobRow>(listWhere('trigger_id = @triggerId AND '));
  const listByAgent = db.prepare<[ListParams], JobRow>(listWhere('agent_id = @agentId AND '));
  const openOfAgent = db.prepare<[string], JobRow>(
    `SELECT * FROM jobs WHERE agent_id = ? AND status IN (${OPEN}) ORDER BY seq ASC`,
  );
  const openOfAgents = db.prepare<[string], OpenSummaryRow>(
    `SELECT id, agent_id, status, created_at,
       (cancel_requested_at IS NOT NULL AND cancel_acked_at IS NULL) AS cancel_unconfirmed
     FROM jobs WHERE agent_id IN (SELECT value FROM json_each(?)) AND status IN (${OPEN}) ORDER BY seq ASC`,
  );
  const unconfirmedCancels = db.prepare<[string], { id: string }>(
    `SELECT id FROM jobs WHERE agent_id = ? AND cancel_requested_at IS NOT NULL AND cancel_acked_at IS NULL
       ORDER BY seq ASC`,
  );
  const logs = db.prepare<[string, number], JobLogLineRecord>(
    'SELECT seq, at, stream, step, text FROM job_logs WHERE job_id = ? AND seq > ? ORDER BY seq',
  );
  const anyLogAfter = db.prepare<[string, number], { seq: number }>(
    'SELECT seq FROM job_logs WHERE job_id = ? AND seq > ? LIMIT 1',
  );
  const logUsage = db.prepare<[string], JobLogSummary>(
    `SELECT lines, bytes, dropped_lines AS droppedLines, dropped_bytes AS droppedBytes
       FROM job_log_usage WHERE job_id = ?`,
  );
  return {
    async findById(id) {
      const row = byId.get(id);
      return row ? toJob(row) : null;
    },
    async findByIds(ids) {
      if (ids.length === 0) return [];
      return byIds.all(JSON.stringify(ids)).map(toJob);
    },
    async findInOrg(orgId, id) {
      const row = inOrg.get(orgId, id);
      return row ? toJob(row) : null;
    },
    async listTriggerJobs(orgId, q) {
      const params: ListParams = {
        orgId,
        status: q.status ?? null,
        triggerId: q.triggerId ?? null,
        agentId: q.agentId ?? null,
        source: q.source ?? null,
        createdAfter: q.createdAfter ?? null,
        createdBefore: q.createdBefore ?? null,
        before: q.beforeSeq ?? Number.MAX_SAFE_INTEGER,
        after: 0,
        limit: q.limit,
      };
      if (params.createdBefore !== null) {
        const last = lastSeqBefore.get({ orgId, at: params.createdBefore })?.seq ?? null;
        if (last === null) return [];
        params.before = Math.min(params.before, last + 1);
      }
      if (params.createdAfter !== null) {
        const first = firstSeqFrom.get({ orgId, at: params.createdAfter })?.seq ?? null;
        if (first === null) return [];
        params.after = first;
      }
      const statement = params.triggerId !== null ? listByTrigger : params.agentId !== null ? listByAgent : list;
      return statement.all(params).map(toJob);
    },
    async listOpenForAgent(agentId) {
      return openOfAgent.all(agentId).map(toJob);
    },
    async listOpenOfAgents(agentIds) {
      if (agentIds.length === 0) return [];
      return openOfAgents.all(JSON.stringify(agentIds)).map((r) => ({
        id: r.id,
        agentId: r.agent_id,
        status: r.status,
        createdAt: r.created_at,
        cancelUnconfirmed: r.cancel_unconfirmed === 1,
      }));
    },
    async listUnconfirmedCancels(agentId) {
      return unconfirmedCancels.all(agentId).map((r) => r.id);
    },
    async listLogs(jobId, { afterSeq, limit, maxBytes }) {
      if (limit === 0) return { lines: [], more: anyLogAfter.get(jobId, afterSeq) !== undefined };
      // Read line by line, so that a page stops at its bytes without reading further.
      const lines: JobLogLineRecord[] = [];
      let bytes = 0;
      for (const line of logs.iterate(jobId, afterSeq)) {
        bytes += textBytes(line.text);
        if (lines.length === limit || (lines.length > 0 && bytes > maxBytes)) return { lines, more: true };
        lines.push(line);
      }
      return { lines, more: false };
    },
    async logSummary(jobId) {
      return logUsage.get(jobId) ?? { lines: 0, bytes: 0, droppedLines: 0, droppedBytes: 0 };
    },
    accept(agentId, jobId, time) {
      return writes.run(() => w.move({ move: 'accept', agentId, jobId, ...time }));
    },
    reject(agentId, jobId, errorMessage, at) {
      return writes.run(() => w.move({ move: 'reject', agentId, jobId, errorMessage, at }));
    },
    start(agentId, jobId, time) {
      return writes.run(() => w.move({ move: 'start', agentId, jobId, ...time }));
    },
    finish(agentId, jobId, report, at) {
      return writes.run(() => w.move({ move: 'finish', agentId, jobId, report, at }));
    },
    cancel(agentId, jobId, request: CancelRequest) {
      return writes.run(() => w.move({ move: 'cancel', agentId, jobId, ...request }));
    },
    appendLogs(agentId, jobId, lines, cap) {
      return writes.run(() => w.appendLogs({ agentId, jobId, lines, cap }));
    },
    failOverdue(now, message) {
      return writes.run(() => w.failOverdue({ now, message }));
    },
    cancelOverdue(now, message) {
      return writes.run(() => w.cancelOverdue({ now, message }));
    },
    failOpenOfAgent(agentId, message, at) {
      return writes.run(() => w.failOpenOfAgent({ agentId, message, at }));
    },
  };
}

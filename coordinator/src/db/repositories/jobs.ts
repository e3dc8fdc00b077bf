import { isTerminalJobStatus, type JobStatus } from '@drover/shared';
import type { PlanJobMessages } from '../../domain/model/chat-outbox.js';
import type {
  AppendLogsResult,
  Job,
  JobChange,
  JobListQuery,
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
import type { Dialect } from '../sql/dialect.js';
import { all, command, manyRows, one, query, rows, run, values, type Database, type Flow } from '../sql/index.js';
import { jobsEnded } from './job-messages.js';
import { mapSoundRows } from '../../util/json.js';
import { toJob, type JobRow } from './job-rows.js';

const OPEN = `('pending', 'queued', 'running')`;

const BY_ID = query<JobRow, [string]>('SELECT * FROM jobs WHERE id = ?');
const IN_ORG = query<JobRow, [string, string]>('SELECT * FROM jobs WHERE org_id = ? AND id = ?');
const BY_IDS = query<JobRow, [string]>((d) => `SELECT * FROM jobs WHERE id ${d.inJsonArray('?')}`);
/**
 * The job an agent reports on (or a user cancels: its agent, or none for a job waiting in a pool),
 * locked until the decision on the report is written.
 */
const OF_AGENT = query<JobRow, [string, string | null]>(
  (d) => `SELECT * FROM jobs WHERE id = ? AND agent_id IS NOT DISTINCT FROM ? ${d.forUpdate}`,
);
/** The same for a batch of its lines: a lock that the job's children (its lines) need not wait for. */
const OF_AGENT_FOR_LINES = query<JobRow, [string, string]>(
  (d) => `SELECT * FROM jobs WHERE id = ? AND agent_id = ? ${d.forNoKeyUpdate}`,
);

// Each change applies from the statuses it names only (the guard holds against any other writer),
// and gives the job as it wrote it: no read after the write.
type At = { id: string; at: string };
const TO_QUEUED = query<JobRow, At & { deadline: string | null }>(
  `UPDATE jobs SET status = 'queued', queued_at = @at, deadline_at = @deadline
     WHERE id = @id AND status = 'pending' RETURNING *`,
);
const TO_RUNNING = query<JobRow, At & { deadline: string | null }>(
  `UPDATE jobs SET status = 'running', started_at = @at, deadline_at = @deadline
     WHERE id = @id AND status IN ('pending', 'queued') RETURNING *`,
);
const TO_REJECTED = query<JobRow, At & { message: string }>(
  `UPDATE jobs SET status = 'rejected', error_message = @message, finished_at = @at
     WHERE id = @id AND status = 'pending' RETURNING *`,
);
type Finished = {
  id: string;
  status: string;
  exitCode: number | null;
  errorMessage: string | null;
  output: string;
  finishedAt: string;
};
const TO_FINISHED = query<JobRow, Finished>(
  `UPDATE jobs SET status = @status, exit_code = @exitCode, error_message = @errorMessage, output = @output,
     finished_at = @finishedAt WHERE id = @id AND status IN ${OPEN} RETURNING *`,
);
const TO_CANCELLED = query<JobRow, At & { message: string }>(
  `UPDATE jobs SET status = 'cancelled', error_message = @message, finished_at = @at, cancel_requested_at = @at
     WHERE id = @id AND status IN ('pending', 'queued') RETURNING *`,
);
const CANCEL_REQUESTED = query<JobRow, At & { deadline: string }>(
  `UPDATE jobs SET cancel_requested_at = @at, deadline_at = @deadline
     WHERE id = @id AND status = 'running' AND cancel_requested_at IS NULL RETURNING *`,
);
const CANCEL_ACKED = command<At>(
  'UPDATE jobs SET cancel_acked_at = @at WHERE id = @id AND cancel_requested_at IS NOT NULL AND cancel_acked_at IS NULL',
);

// The sweeps: one UPDATE each, whose conditions PostgreSQL checks again on a row another
// transaction changed meanwhile.
type Sweep = { now: string; message: string };
const OVERDUE = values<string, Sweep>(
  `UPDATE jobs SET status = 'failed', error_message = @message, finished_at = @now
     WHERE status IN ('queued', 'running') AND deadline_at IS NOT NULL AND deadline_at < @now
       AND (status = 'running' OR agent_id NOT IN (SELECT id FROM agents WHERE status = 'connected'))
     RETURNING id`,
);
const OVERDUE_CANCELS = values<string, Sweep>(
  `UPDATE jobs SET status = 'cancelled', error_message = @message, finished_at = @now
     WHERE status = 'running' AND cancel_requested_at IS NOT NULL AND deadline_at IS NOT NULL AND deadline_at < @now
     RETURNING id`,
);
const OPEN_OF_AGENT_FAILED = values<string, Sweep & { agentId: string }>(
  `UPDATE jobs SET status = 'failed', error_message = @message, finished_at = @now
     WHERE agent_id = @agentId AND status IN ${OPEN} RETURNING id`,
);
/** Open jobs of agents revoked (stored after the revocation failed the agent's open jobs). */
const OPEN_OF_REVOKED_FAILED = values<string, Sweep>(
  `UPDATE jobs SET status = 'failed', error_message = @message, finished_at = @now
     WHERE agent_id IN (SELECT id FROM agents WHERE status = 'revoked') AND status IN ${OPEN} RETURNING id`,
);

type ListParams = {
  orgId: string;
  status: string | null;
  triggerId: string | null;
  batchId: string | null;
  agentId: string | null;
  source: string | null;
  createdAfter: string | null;
  createdBefore: string | null;
  before: number;
  after: number;
  limit: number;
};
// One query per index that leads the scan (the batch's, the trigger's, the agent's, the status's,
// the source's, in that order of preference, or the organization's); every other filter is a
// nullable parameter, so the SQL text is fixed. Each parameter is compared with its column before
// it is tested for NULL: PostgreSQL takes its type from the first.
const listWhere = (leading: string) =>
  query<JobRow, ListParams>(
    `SELECT * FROM jobs WHERE ${leading}org_id = @orgId AND kind = 'trigger'
       AND (trigger_id = @triggerId OR @triggerId IS NULL) AND (agent_id = @agentId OR @agentId IS NULL)
       AND (batch_id = @batchId OR @batchId IS NULL)
       AND (status = @status OR @status IS NULL) AND (source = @source OR @source IS NULL)
       AND (created_at >= @createdAfter OR @createdAfter IS NULL)
       AND (created_at < @createdBefore OR @createdBefore IS NULL)
       AND seq < @before AND seq >= @after ORDER BY seq DESC LIMIT @limit`,
  );
const LIST = listWhere('');
const LIST_BY_TRIGGER = listWhere('trigger_id = @triggerId AND ');
const LIST_BY_AGENT = listWhere('agent_id = @agentId AND ');
const LIST_BY_BATCH = listWhere('batch_id = @batchId AND ');
// On jobs_org_status and jobs_org_source (migration 0049; PostgreSQL 0032): only the jobs of that
// status or source are read, however few of the organization's jobs they are.
const LIST_BY_STATUS = listWhere('status = @status AND ');
const LIST_BY_SOURCE = listWhere('source = @source AND ');
/**
 * SQLite must be told to read min/max(seq) from the (org_id, created_at) index: left alone, its
 * planner walks jobs_org_seq row by row. PostgreSQL's picks the index itself.
 */
const byCreation = (d: Dialect) => (d.name === 'sqlite' ? 'INDEXED BY jobs_org_created' : '');
// A creation-time range as the window of creation numbers (seq) that holds all its jobs, read
// from the (org_id, created_at) index alone: the list's scan starts and stops at the range
// instead of walking every newer (or older) job. Exact whatever the clock did: seq and
// created_at need not be in the same order, the bounds are the max and min over the range.
const LAST_SEQ_BEFORE = values<number | null, [string, string]>(
  (d) => `SELECT max(seq) FROM jobs ${byCreation(d)} WHERE org_id = ? AND created_at < ?`,
);
const FIRST_SEQ_FROM = values<number | null, [string, string]>(
  (d) => `SELECT min(seq) FROM jobs ${byCreation(d)} WHERE org_id = ? AND created_at >= ?`,
);

// The home page's overview (domain/overview/): trigger jobs by hour of creation and status, read
// from the (org_id, created_at) index; the running ones from their own small index (migration
// 0039); the failures from the index of ended jobs (org_id, status, finished_at), one seek a status.
const BY_HOUR = query<{ hour: string; status: JobStatus; n: number }, [string, string]>(
  (d) => `SELECT ${d.hourOf('created_at')} AS hour, status, count(*) AS n FROM jobs
    WHERE org_id = ? AND created_at >= ? AND kind = 'trigger' GROUP BY 1, 2`,
);
const RUNNING_OF_ORG = query<JobRow, [string, number]>(
  `SELECT * FROM jobs WHERE org_id = ? AND status = 'running' AND kind = 'trigger' ORDER BY seq DESC LIMIT ?`,
);
const lastEnded = (status: string) =>
  `SELECT * FROM jobs WHERE org_id = @orgId AND status = '${status}' AND finished_at IS NOT NULL
     AND kind = 'trigger' ORDER BY finished_at DESC LIMIT @limit`;
const RECENT_FAILURES = query<JobRow, { orgId: string; limit: number }>(
  `SELECT * FROM (${lastEnded('failed')}) f UNION ALL SELECT * FROM (${lastEnded('timed_out')}) t
     ORDER BY finished_at DESC, seq DESC LIMIT @limit`,
);

// The open jobs an agent's stream hands out: a job of a batch held by its maxParallel is not one yet.
const OPEN_OF_AGENT = query<JobRow, [string]>(
  `SELECT * FROM jobs WHERE agent_id = ? AND status IN ${OPEN} AND held = FALSE ORDER BY seq`,
);
const OPEN_OF_AGENTS = query<
  { id: string; agent_id: string; status: OpenJobStatus; created_at: string; cancel_unconfirmed: number },
  [string]
>(
  (d) => `SELECT id, agent_id, status, created_at,
       (cancel_requested_at IS NOT NULL AND cancel_acked_at IS NULL) AS cancel_unconfirmed
     FROM jobs WHERE agent_id ${d.inJsonArray('?')} AND status IN ${OPEN} AND held = FALSE
     ORDER BY seq`,
);
const UNCONFIRMED_CANCELS = values<string, [string]>(
  `SELECT id FROM jobs WHERE agent_id = ? AND cancel_requested_at IS NOT NULL AND cancel_acked_at IS NULL
     ORDER BY seq`,
);

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

const LOG_USAGE = query<LogUsage, [string]>('SELECT * FROM job_log_usage WHERE job_id = ?');
const SAVE_LOG_USAGE = command<LogUsage & { job_id: string }>(
  `INSERT INTO job_log_usage (job_id, lines, bytes, gap_first_seq, gap_last_seq, dropped_lines, dropped_bytes)
     VALUES (@job_id, @lines, @bytes, @gap_first_seq, @gap_last_seq, @dropped_lines, @dropped_bytes)
     ON CONFLICT (job_id) DO UPDATE SET lines = excluded.lines, bytes = excluded.bytes,
       gap_first_seq = excluded.gap_first_seq, gap_last_seq = excluded.gap_last_seq,
       dropped_lines = excluded.dropped_lines, dropped_bytes = excluded.dropped_bytes`,
);
const LOG_SUMMARY = query<JobLogSummary, [string]>(
  `SELECT lines, bytes, dropped_lines AS "droppedLines", dropped_bytes AS "droppedBytes"
     FROM job_log_usage WHERE job_id = ?`,
);
/** A line as stored: `[seq, at, stream, step, text]`. */
type LineFields = [seq: number, at: string, stream: string, step: number | null, text: string];
/**
 * A batch of an open job's lines; a line whose (job, seq) is stored already, or comes again later
 * in the batch, is skipped. SQLite inserts line by line with its prepared statement (a line's text
 * bound as it is: reading long lines out of one JSON parameter cost it 80% more), PostgreSQL the
 * whole batch from one JSON array, each field cast to its column's type (one round trip).
 */
const INSERT_LINES = manyRows<[string], LineFields, number>(
  `INSERT INTO job_logs (job_id, seq, at, stream, step, text) VALUES (?, ?, ?, ?, ?, ?)
   ON CONFLICT (job_id, seq) DO NOTHING`,
  `INSERT INTO job_logs (job_id, seq, at, stream, step, text)
   SELECT ?, (value ->> 0)::bigint, (value ->> 1)::timestamptz, value ->> 2, (value ->> 3)::bigint, value ->> 4
   FROM json_array_elements(?::json) AS l(value)
   ON CONFLICT (job_id, seq) DO NOTHING RETURNING seq`,
  ([seq]) => seq,
);
/** A line's place and size, as the cap's walk reads it (never its text). */
interface LineSize {
  seq: number;
  at: string;
  bytes: number;
}

/** How many lines' sizes one read of the cap's walk takes. */
const WALK_CHUNK = 500;
/** The job's lines from `seq` on, oldest first, with their text's size (never the text): a chunk of the walk. */
const SIZES_FROM = query<LineSize, [string, number, number]>(
  'SELECT seq, at, octet_length(text) AS bytes FROM job_logs WHERE job_id = ? AND seq >= ? ORDER BY seq LIMIT ?',
);
const LINE_BYTES = values<number, [string, number]>(
  'SELECT octet_length(text) FROM job_logs WHERE job_id = ? AND seq = ?',
);
const DELETE_LINES = command<[string, number, number]>(
  'DELETE FROM job_logs WHERE job_id = ? AND seq >= ? AND seq <= ?',
);
const INSERT_GAP_LINE = command<[string, number, string, string]>(
  "INSERT INTO job_logs (job_id, seq, at, stream, step, text) VALUES (?, ?, ?, 'system', NULL, ?)",
);
/** The sizes of the lines after `seq` (a page's worth and one more), then the lines of the page alone. */
const SIZES_AFTER = query<{ seq: number; bytes: number }, [string, number, number]>(
  'SELECT seq, octet_length(text) AS bytes FROM job_logs WHERE job_id = ? AND seq > ? ORDER BY seq LIMIT ?',
);
const LINES = query<JobLogLineRecord, [string, number, number]>(
  'SELECT seq, at, stream, step, text FROM job_logs WHERE job_id = ? AND seq > ? AND seq <= ? ORDER BY seq',
);

/**
 * A line the cap has passed: once it dropped lines, the head and the gap are settled, and a line
 * not newer than the gap is ignored (a resend of a dropped line, or one come too late for its place).
 */
const beforeGapEnd = (u: LogUsage, seq: number): boolean => u.gap_last_seq !== null && seq <= u.gap_last_seq;

const textBytes = (text: string): number => Buffer.byteLength(text, 'utf8');

/**
 * Walks the job's lines from `from` on, oldest first, a chunk at a time, while `take` says go on:
 * reads only as far as it walks. Gives the line `take` stopped at, or null at the end.
 */
function* walk(jobId: string, from: number, take: (line: LineSize) => boolean): Flow<LineSize | null> {
  for (let seq = from; ;) {
    const chunk = yield* all(SIZES_FROM, [jobId, seq, WALK_CHUNK]);
    for (const line of chunk) if (!take(line)) return line;
    if (chunk.length < WALK_CHUNK) return null;
    seq = chunk[chunk.length - 1]!.seq + 1;
  }
}

/**
 * Brings a log over its cap (of bytes or of lines) back under it (docs/jobs.md, "Log lines"): the
 * head (the first lines within `cap.headBytes` and `cap.headLines`) stays, the oldest lines after
 * it are deleted until the rest fits, and one line at the last dropped seq says how many were
 * dropped in all (replacing the one a previous cut left). Reads only the lines it deletes, and the head at the first cut.
 */
function* cutLog(jobId: string, usage: LogUsage, cap: LogCap): Flow<LogUsage> {
  let from: number | null = null;
  let gapLine: { seq: number; bytes: number } | null = null;
  if (usage.gap_last_seq === null) {
    let head = 0;
    let headLines = 0;
    const inHead = (line: LineSize) => (head += line.bytes) <= cap.headBytes && ++headLines <= cap.headLines;
    from = (yield* walk(jobId, 0, inHead))?.seq ?? null;
  } else {
    const bytes = yield* one(LINE_BYTES, [jobId, usage.gap_last_seq]);
    if (bytes !== null) gapLine = { seq: usage.gap_last_seq, bytes };
    from = usage.gap_last_seq + 1;
  }
  if (from === null) return usage;
  const dropped = { lines: usage.dropped_lines, bytes: usage.dropped_bytes };
  const kept = () => usage.bytes - (dropped.bytes - usage.dropped_bytes) - (gapLine?.bytes ?? 0);
  const keptLines = () => usage.lines - (dropped.lines - usage.dropped_lines) - (gapLine ? 1 : 0);
  // The gap's line counts too.
  const fits = () => kept() + textBytes(cap.gapText(dropped)) <= cap.maxBytes && keptLines() + 1 <= cap.maxLines;
  const cut: { first: number | null; last: LineSize | null } = { first: null, last: null };
  yield* walk(jobId, from, (line) => {
    if (fits()) return false;
    cut.first ??= line.seq;
    cut.last = line;
    dropped.lines += 1;
    dropped.bytes += line.bytes;
    return true;
  });
  const { first, last } = cut;
  if (first === null || last === null) return usage;
  yield* run(DELETE_LINES, [jobId, first, last.seq]);
  if (gapLine) yield* run(DELETE_LINES, [jobId, gapLine.seq, gapLine.seq]);
  const text = cap.gapText(dropped);
  yield* run(INSERT_GAP_LINE, [jobId, last.seq, last.at, text]);
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
 * Stores a batch of an open job's lines and applies the cap, in one write: after the job's row
 * (locked on PostgreSQL, so a batch and the job's finish, or another batch through another
 * coordinator, are one after the other), a job that ended takes no more lines and the counts stay
 * exact.
 */
function* appendLogs(
  agentId: string,
  jobId: string,
  lines: readonly NewLogLine[],
  cap: LogCap,
): Flow<AppendLogsResult> {
  const row = yield* one(OF_AGENT_FOR_LINES, [jobId, agentId]);
  if (!row) return { outcome: 'not_found' };
  const job = toJob(row);
  if (isTerminalJobStatus(job.status)) return { outcome: 'ended', job };
  const before = (yield* one(LOG_USAGE, [jobId])) ?? NO_LOG;
  const fresh = lines.filter((l) => !beforeGapEnd(before, l.seq));
  if (fresh.length === 0) return { outcome: 'stored', job, accepted: 0 };
  // Lone surrogates as U+FFFD, as either driver binds a string: PostgreSQL refuses them in JSON.
  const batch = fresh.map((l): LineFields => [l.seq, l.at, l.stream, l.step ?? null, l.text.toWellFormed()]);
  const inserted = yield* rows(INSERT_LINES, [jobId], batch);
  if (inserted.length === 0) return { outcome: 'stored', job, accepted: 0 };
  let usage: LogUsage = {
    ...before,
    lines: before.lines + inserted.length,
    bytes: before.bytes + inserted.reduce((sum, [, , , , text]) => sum + Buffer.byteLength(text), 0),
  };
  if (usage.bytes > cap.maxBytes || usage.lines > cap.maxLines) usage = yield* cutLog(jobId, usage, cap);
  yield* run(SAVE_LOG_USAGE, { job_id: jobId, ...usage });
  return { outcome: 'stored', job, accepted: inserted.length };
}

/** The job as it is now (its row is locked, or it is SQLite's one writer). */
function* reread(id: string): Flow<Job> {
  return toJob((yield* one(BY_ID, [id])) as JobRow);
}

/** Writes the change if the job is still in a status it applies from; gives the job's row then, else null. */
function write(id: string, c: JobChange): Flow<JobRow | null> {
  if ('cancel' in c) {
    if (c.cancel === 'now') return one(TO_CANCELLED, { id, message: c.errorMessage, at: c.at });
    return one(CANCEL_REQUESTED, { id, at: c.at, deadline: c.deadlineAt });
  }
  switch (c.status) {
    case 'queued':
      return one(TO_QUEUED, { id, at: c.at, deadline: c.deadlineAt });
    case 'running':
      return one(TO_RUNNING, { id, at: c.at, deadline: c.deadlineAt });
    case 'rejected':
      return one(TO_REJECTED, { id, message: c.errorMessage, at: c.at });
    default:
      return one(TO_FINISHED, {
        id,
        status: c.status,
        exitCode: c.exitCode,
        errorMessage: c.errorMessage,
        output: JSON.stringify(c.output),
        finishedAt: c.finishedAt,
      });
  }
}

/**
 * The job repository, written once (docs/architecture.md, "Two databases"). `planMove` decides
 * the agents' reports (the domain's planJobMove); `planMessages` whether a job that ended posts to
 * chat (planJobMessages).
 *
 * The job writes are hot writes (`db.write`): on SQLite operations of the group commit
 * (db/writer/), run serially, so a move reads the job, lets the domain decide and applies the
 * change with no lock; on PostgreSQL one transaction each, where the move locks the job's row
 * (`FOR UPDATE`) before the domain decides, so reports and cancels reaching two coordinators at
 * once are decided one after the other and a terminal status is written exactly once. Each change
 * is a conditional UPDATE on the statuses it applies from, which still guards writers outside the
 * lock. Every write that ends a job enqueues its chat notification in the same write
 * (job-messages.ts).
 */
export function createJobRepository(db: Database, planMove: PlanJobMove, planMessages: PlanJobMessages): JobRepository {
  function* move(m: JobMove): Flow<TransitionResult> {
    const row = yield* one(OF_AGENT, [m.jobId, m.agentId]);
    if (!row) return { outcome: 'not_found' };
    const job = toJob(row);
    const plan = planMove(job, m);
    if (plan.decision !== 'apply') {
      if (!plan.confirmsCancel) return { outcome: plan.decision, job };
      yield* run(CANCEL_ACKED, { id: job.id, at: m.at });
      return { outcome: plan.decision, job: yield* reread(job.id) };
    }
    const written = yield* write(job.id, plan.change);
    if (written) {
      if (plan.confirmsCancel) yield* run(CANCEL_ACKED, { id: job.id, at: m.at });
      const moved = plan.confirmsCancel ? yield* reread(job.id) : toJob(written);
      if (isTerminalJobStatus(moved.status)) yield* jobsEnded(planMessages, [moved.id], m.at);
      return { outcome: 'applied', job: moved };
    }
    // Changed by another writer between the read and the UPDATE: decide again on what it wrote.
    const now = yield* reread(job.id);
    return { outcome: planMove(now, m).decision === 'unchanged' ? 'unchanged' : 'conflict', job: now };
  }

  /** A sweep's UPDATE ... RETURNING id, with the chat messages of the jobs it ended, in one write. */
  function* endMany(sweep: Flow<string[]>, at: string): Flow<string[]> {
    const ids = yield* sweep;
    yield* jobsEnded(planMessages, ids, at);
    return ids;
  }

  const reports = (m: JobMove) => db.write(() => move(m));

  return {
    async findById(id) {
      const row = await db.one(BY_ID, [id]);
      return row ? toJob(row) : null;
    },
    async findByIds(ids) {
      if (ids.length === 0) return { jobs: [], damaged: [] };
      const { sound, damaged } = mapSoundRows(await db.all(BY_IDS, [JSON.stringify(ids)]), toJob, (r) => r.id);
      return { jobs: sound, damaged };
    },
    async findInOrg(orgId, id) {
      const row = await db.one(IN_ORG, [orgId, id]);
      return row ? toJob(row) : null;
    },
    listTriggerJobs(orgId, q) {
      return db.read(() => listTriggerJobs(orgId, q));
    },
    async countTriggerJobsByHour(orgId, since) {
      return (await db.all(BY_HOUR, [orgId, since])).map(({ hour, status, n }) => ({ hour, status, count: n }));
    },
    async listRunningTriggerJobs(orgId, limit) {
      return (await db.all(RUNNING_OF_ORG, [orgId, limit])).map(toJob);
    },
    async listRecentFailures(orgId, limit) {
      return (await db.all(RECENT_FAILURES, { orgId, limit })).map(toJob);
    },
    async listOpenForAgent(agentId) {
      const { sound, damaged } = mapSoundRows(await db.all(OPEN_OF_AGENT, [agentId]), toJob, (r) => r.id);
      return { jobs: sound, damaged };
    },
    async listOpenOfAgents(agentIds) {
      if (agentIds.length === 0) return [];
      return (await db.all(OPEN_OF_AGENTS, [JSON.stringify(agentIds)])).map((r) => ({
        id: r.id,
        agentId: r.agent_id,
        status: r.status,
        createdAt: r.created_at,
        cancelUnconfirmed: r.cancel_unconfirmed === 1,
      }));
    },
    listUnconfirmedCancels(agentId) {
      return db.all(UNCONFIRMED_CANCELS, [agentId]);
    },
    listLogs(jobId, page) {
      return db.read(() => listLogs(jobId, page));
    },
    async logSummary(jobId) {
      return (await db.one(LOG_SUMMARY, [jobId])) ?? { lines: 0, bytes: 0, droppedLines: 0, droppedBytes: 0 };
    },
    accept(agentId, jobId, time) {
      return reports({ move: 'accept', agentId, jobId, ...time });
    },
    reject(agentId, jobId, errorMessage, at) {
      return reports({ move: 'reject', agentId, jobId, errorMessage, at });
    },
    start(agentId, jobId, time) {
      return reports({ move: 'start', agentId, jobId, ...time });
    },
    finish(agentId, jobId, report, at) {
      return reports({ move: 'finish', agentId, jobId, report, at });
    },
    cancel(agentId, jobId, request) {
      return reports({ move: 'cancel', agentId, jobId, ...request });
    },
    appendLogs(agentId, jobId, lines, cap) {
      return db.write(() => appendLogs(agentId, jobId, lines, cap));
    },
    failOverdue(now, message) {
      return db.write(() => endMany(all(OVERDUE, { now, message }), now));
    },
    cancelOverdue(now, message) {
      return db.write(() => endMany(all(OVERDUE_CANCELS, { now, message }), now));
    },
    failOpenOfAgent(agentId, message, at) {
      return db.write(() => endMany(all(OPEN_OF_AGENT_FAILED, { agentId, message, now: at }), at));
    },
    failOpenOfRevoked(message, at) {
      return db.write(() => endMany(all(OPEN_OF_REVOKED_FAILED, { message, now: at }), at));
    },
  };
}

/** The trigger jobs of a list page (JobRepository.listTriggerJobs). */
function* listTriggerJobs(orgId: string, q: JobListQuery): Flow<Job[]> {
  const params: ListParams = {
    orgId,
    status: q.status ?? null,
    triggerId: q.triggerId ?? null,
    batchId: q.batchId ?? null,
    agentId: q.agentId ?? null,
    source: q.source ?? null,
    createdAfter: q.createdAfter ?? null,
    createdBefore: q.createdBefore ?? null,
    before: q.beforeSeq ?? Number.MAX_SAFE_INTEGER,
    after: 0,
    limit: q.limit,
  };
  if (params.createdBefore !== null) {
    const last = yield* one(LAST_SEQ_BEFORE, [orgId, params.createdBefore]);
    if (last === null) return [];
    params.before = Math.min(params.before, last + 1);
  }
  if (params.createdAfter !== null) {
    const first = yield* one(FIRST_SEQ_FROM, [orgId, params.createdAfter]);
    if (first === null) return [];
    params.after = first;
  }
  const statement =
    params.batchId !== null
      ? LIST_BY_BATCH
      : params.triggerId !== null
        ? LIST_BY_TRIGGER
        : params.agentId !== null
          ? LIST_BY_AGENT
          : params.status !== null
            ? LIST_BY_STATUS
            : params.source !== null
              ? LIST_BY_SOURCE
              : LIST;
  return (yield* all(statement, params)).map(toJob);
}

/**
 * A page of a job's log: the sizes first (never the text), then the lines of the page alone, so a
 * page stops at its bytes without the text of what follows it being read.
 */
function* listLogs(
  jobId: string,
  { afterSeq, limit, maxBytes }: { afterSeq: number; limit: number; maxBytes: number },
): Flow<{ lines: JobLogLineRecord[]; more: boolean }> {
  const sizes = yield* all(SIZES_AFTER, [jobId, afterSeq, limit + 1]);
  let bytes = 0;
  let end = 0;
  while (end < sizes.length && end < limit) {
    bytes += sizes[end]!.bytes;
    if (end > 0 && bytes > maxBytes) break;
    end += 1;
  }
  const more = sizes.length > end;
  if (end === 0) return { lines: [], more };
  return { lines: yield* all(LINES, [jobId, afterSeq, sizes[end - 1]!.seq]), more };
}

import { isTerminalJobStatus } from '@drover/shared';
import type { OpenJobStatus } from '../../domain/job-state.js';
import type { PlanJobMessages } from '../../domain/model/chat-outbox.js';
import type {
  CancelRequest,
  JobChange,
  JobLogLineRecord,
  JobMove,
  JobRepository,
  NewLogLine,
  PlanJobMove,
  TransitionResult,
} from '../../domain/model/jobs.js';
import type { Db } from '../database.js';
import type { WriteExecutor } from '../writer/executor.js';
import { createOutboxWrites } from './chat-outbox.js';
import { toJob, type JobRow } from './job-rows.js';

interface OpenSummaryRow {
  id: string;
  agent_id: string;
  status: OpenJobStatus;
  created_at: string;
  cancel_unconfirmed: number;
}

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
 * job enqueues its chat notification in the same operation (chat-outbox.ts).
 */
function createJobWrites(db: Db, planMove: PlanJobMove, planMessages: PlanJobMessages) {
  const outbox = createOutboxWrites(db, planMessages);
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
    appendLogs({ agentId, jobId, lines }: { agentId: string; jobId: string; lines: readonly NewLogLine[] }) {
      const row = ofAgent.get(jobId, agentId);
      if (!row) return null;
      let accepted = 0;
      for (const l of lines) accepted += insertLog.run(jobId, l.seq, l.at, l.stream, l.step ?? null, l.text).changes;
      return { job: toJob(row), accepted };
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
  db: Db,
  writes: WriteExecutor,
  planMove: PlanJobMove,
  planMessages: PlanJobMessages,
): JobRepository {
  const w = createJobWrites(db, planMove, planMessages);
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
  const logs = db.prepare<[string, number, number], JobLogLineRecord>(
    'SELECT seq, at, stream, step, text FROM job_logs WHERE job_id = ? AND seq > ? ORDER BY seq LIMIT ?',
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
    async listLogs(jobId, afterSeq, limit) {
      return logs.all(jobId, afterSeq, limit);
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
    appendLogs(agentId, jobId, lines) {
      return writes.run(() => w.appendLogs({ agentId, jobId, lines }));
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

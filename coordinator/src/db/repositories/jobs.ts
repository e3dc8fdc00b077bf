import type { JobStatus, LogStream } from '@drover/shared';
import {
  decide,
  decideFinish,
  deadlineAt,
  finishInstant,
  OPEN_JOB_STATUSES,
  type Decision,
  type JobResult,
} from '../../domain/job-state.js';
import type { Db } from '../database.js';
import type { WriteBatcher } from '../write-batcher.js';
import { toJob, type Job, type JobRow } from './job-rows.js';

export interface JobListQuery {
  status?: JobStatus | undefined;
  triggerId?: string | undefined;
  limit: number;
  /** Jobs created before this one (the previous page's last `seq`). */
  beforeSeq?: number | undefined;
}

export interface JobLogLineRecord {
  seq: number;
  at: string;
  stream: LogStream;
  step: number | null;
  text: string;
}

export interface NewLogLine {
  seq: number;
  at: string;
  stream: LogStream;
  step?: number | null | undefined;
  text: string;
}

/**
 * What an agent's report did: `applied` (the move was made now), `unchanged` (it had been made
 * before: a harmless repeat), `conflict` (impossible from the job's status), `not_found` (no such
 * job for this agent). `job` is the job after the call.
 */
export type TransitionResult =
  { outcome: 'applied' | 'unchanged' | 'conflict'; job: Job } | { outcome: 'not_found'; job?: undefined };

export interface TransitionTime {
  /** ISO instant of the move. */
  at: string;
  /** Added to the job's timeout to make its deadline (queue and start). */
  deadlineGraceMs: number;
}

export interface FinishReport extends JobResult {
  /** The agent's own finish instant (a result sent late from its outbox). */
  finishedAt?: string | undefined;
}

export interface JobRepository {
  findById(id: string): Promise<Job | null>;
  findInOrg(orgId: string, id: string): Promise<Job | null>;
  /** Trigger jobs (never update jobs) of an organization, newest first. */
  listTriggerJobs(orgId: string, query: JobListQuery): Promise<Job[]>;
  /** The agent's `pending`, `queued` and `running` jobs, oldest first (stream delivery order). */
  listOpenForAgent(agentId: string): Promise<Job[]>;
  /** Log lines of a job in `seq` order, after `afterSeq`, at most `limit`. */
  listLogs(jobId: string, afterSeq: number, limit: number): Promise<JobLogLineRecord[]>;
  /** `pending` → `queued`. */
  accept(agentId: string, jobId: string, time: TransitionTime): Promise<TransitionResult>;
  /** `pending` → `rejected`. */
  reject(agentId: string, jobId: string, errorMessage: string, at: string): Promise<TransitionResult>;
  /** `pending` | `queued` → `running`. */
  start(agentId: string, jobId: string, time: TransitionTime): Promise<TransitionResult>;
  /** Any open status → the reported terminal status, exactly once. */
  finish(agentId: string, jobId: string, report: FinishReport, at: string): Promise<TransitionResult>;
  /**
   * Stores log lines, ignoring any whose `(job, seq)` is already stored (resends are harmless),
   * in every status. Null when the job is not the agent's.
   */
  appendLogs(
    agentId: string,
    jobId: string,
    lines: readonly NewLogLine[],
  ): Promise<{ job: Job; accepted: number } | null>;
  /**
   * The deadline sweep: fails `running` jobs past their deadline, and `queued` ones past it whose
   * agent is not connected (a connected agent still holds its queue). Returns the failed job ids.
   */
  failOverdue(now: string, errorMessage: string): Promise<string[]>;
  /** Fails every open job of an agent (it was revoked). Returns the failed job ids. */
  failOpenOfAgent(agentId: string, errorMessage: string, at: string): Promise<string[]>;
}

const OPEN = OPEN_JOB_STATUSES.map((s) => `'${s}'`).join(', ');

export function createJobRepository(db: Db, writes: WriteBatcher): JobRepository {
  const byId = db.prepare<[string], JobRow>('SELECT * FROM jobs WHERE id = ?');
  const inOrg = db.prepare<[string, string], JobRow>('SELECT * FROM jobs WHERE org_id = ? AND id = ?');
  const ofAgent = db.prepare<[string, string], JobRow>('SELECT * FROM jobs WHERE id = ? AND agent_id = ?');
  type ListParams = { orgId: string; status: string | null; triggerId?: string; before: number; limit: number };
  const list = db.prepare<[ListParams], JobRow>(
    `SELECT * FROM jobs WHERE org_id = @orgId AND kind = 'trigger' AND (@status IS NULL OR status = @status)
       AND seq < @before ORDER BY seq DESC LIMIT @limit`,
  );
  const listByTrigger = db.prepare<[ListParams], JobRow>(
    `SELECT * FROM jobs WHERE org_id = @orgId AND trigger_id = @triggerId AND kind = 'trigger'
       AND (@status IS NULL OR status = @status) AND seq < @before ORDER BY seq DESC LIMIT @limit`,
  );
  const openOfAgent = db.prepare<[string], JobRow>(
    `SELECT * FROM jobs WHERE agent_id = ? AND status IN (${OPEN}) ORDER BY seq ASC`,
  );
  const logs = db.prepare<[string, number, number], JobLogLineRecord>(
    'SELECT seq, at, stream, step, text FROM job_logs WHERE job_id = ? AND seq > ? ORDER BY seq LIMIT ?',
  );
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
  const insertLog = db.prepare(
    'INSERT OR IGNORE INTO job_logs (job_id, seq, at, stream, step, text) VALUES (?, ?, ?, ?, ?, ?)',
  );
  const overdue = db.prepare<[{ now: string; message: string }], { id: string }>(
    `UPDATE jobs SET status = 'failed', error_message = @message, finished_at = @now
       WHERE status IN ('queued', 'running') AND deadline_at IS NOT NULL AND deadline_at < @now
         AND (status = 'running' OR agent_id NOT IN (SELECT id FROM agents WHERE status = 'connected'))
       RETURNING id`,
  );
  const openOfAgentFailed = db.prepare<[{ agentId: string; message: string; at: string }], { id: string }>(
    `UPDATE jobs SET status = 'failed', error_message = @message, finished_at = @at
       WHERE agent_id = @agentId AND status IN (${OPEN}) RETURNING id`,
  );

  /**
   * Runs one move inside the write batcher's transaction: reads the job, decides, and applies
   * with a conditional UPDATE. Ops run serially, so the read and the UPDATE see the same state;
   * the `WHERE status IN (...)` still guards writers outside this process.
   */
  const transition = (
    agentId: string,
    jobId: string,
    decideFor: (job: Job) => Decision,
    apply: (job: Job) => number,
  ): Promise<TransitionResult> =>
    writes.run((): TransitionResult => {
      const row = ofAgent.get(jobId, agentId);
      if (!row) return { outcome: 'not_found' };
      const job = toJob(row);
      const decision = decideFor(job);
      if (decision === 'unchanged') return { outcome: 'unchanged', job };
      if (decision === 'conflict') return { outcome: 'conflict', job };
      if (apply(job) === 1) return { outcome: 'applied', job: toJob(byId.get(jobId) as JobRow) };
      // Changed by another writer between the read and the UPDATE: decide again on what it wrote.
      const now = toJob(byId.get(jobId) as JobRow);
      return { outcome: decideFor(now) === 'unchanged' ? 'unchanged' : 'conflict', job: now };
    });

  return {
    async findById(id) {
      const row = byId.get(id);
      return row ? toJob(row) : null;
    },
    async findInOrg(orgId, id) {
      const row = inOrg.get(orgId, id);
      return row ? toJob(row) : null;
    },
    async listTriggerJobs(orgId, q) {
      const params: ListParams = {
        orgId,
        status: q.status ?? null,
        before: q.beforeSeq ?? Number.MAX_SAFE_INTEGER,
        limit: q.limit,
      };
      if (q.triggerId === undefined) return list.all(params).map(toJob);
      return listByTrigger.all({ ...params, triggerId: q.triggerId }).map(toJob);
    },
    async listOpenForAgent(agentId) {
      return openOfAgent.all(agentId).map(toJob);
    },
    async listLogs(jobId, afterSeq, limit) {
      return logs.all(jobId, afterSeq, limit);
    },
    accept(agentId, jobId, { at, deadlineGraceMs }) {
      return transition(
        agentId,
        jobId,
        (job) => decide('accept', job.status),
        (job) => toQueued.run({ id: job.id, at, deadline: deadlineAt(at, job.timeoutMs, deadlineGraceMs) }).changes,
      );
    },
    reject(agentId, jobId, message, at) {
      return transition(
        agentId,
        jobId,
        (job) => decide('reject', job.status),
        (job) => toRejected.run({ id: job.id, message, at }).changes,
      );
    },
    start(agentId, jobId, { at, deadlineGraceMs }) {
      return transition(
        agentId,
        jobId,
        (job) => decide('start', job.status),
        (job) => toRunning.run({ id: job.id, at, deadline: deadlineAt(at, job.timeoutMs, deadlineGraceMs) }).changes,
      );
    },
    finish(agentId, jobId, report, at) {
      const result: JobResult = {
        status: report.status,
        exitCode: report.exitCode,
        errorMessage: report.errorMessage,
        output: report.output,
      };
      return transition(
        agentId,
        jobId,
        (job) => decideFinish(job, result),
        (job) =>
          toFinished.run({
            id: job.id,
            status: result.status,
            exitCode: result.exitCode,
            errorMessage: result.errorMessage,
            output: JSON.stringify(result.output),
            finishedAt: finishInstant(report.finishedAt, job.createdAt, at),
          }).changes,
      );
    },
    appendLogs(agentId, jobId, lines) {
      return writes.run(() => {
        const row = ofAgent.get(jobId, agentId);
        if (!row) return null;
        let accepted = 0;
        for (const l of lines) accepted += insertLog.run(jobId, l.seq, l.at, l.stream, l.step ?? null, l.text).changes;
        return { job: toJob(row), accepted };
      });
    },
    failOverdue(now, message) {
      return writes.run(() => overdue.all({ now, message }).map((r) => r.id));
    },
    failOpenOfAgent(agentId, message, at) {
      return writes.run(() => openOfAgentFailed.all({ agentId, message, at }).map((r) => r.id));
    },
  };
}

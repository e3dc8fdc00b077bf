import type { JobStatus } from '@drover/shared';
import type { ChatOrigin, Job, JobKind, JobSource, NewJob } from '../../domain/model/jobs.js';
import { parseJsonColumn } from '../../util/json.js';
import { command, flag, isSet } from '../sql/index.js';

/** A row of `jobs`, as both databases give it (db/sql/postgres.ts). */
export interface JobRow {
  id: string;
  org_id: string;
  kind: JobKind;
  source: JobSource;
  trigger_id: string | null;
  agent_id: string | null;
  batch_id: string | null;
  held: number;
  workflow_id: string | null;
  workflow_name: string;
  status: JobStatus;
  ref: string | null;
  debug: number;
  params: string;
  output: string | null;
  exit_code: number | null;
  error_message: string | null;
  forced: number;
  force_reason: string | null;
  api_token_id: string | null;
  user_id: string | null;
  timeout_ms: number | null;
  created_at: string;
  queued_at: string | null;
  started_at: string | null;
  finished_at: string | null;
  deadline_at: string | null;
  cancel_requested_at: string | null;
  cancel_acked_at: string | null;
  seq: number;
  number: number;
  chat_origin: string | null;
}

export const toJob = (r: JobRow): Job => ({
  id: r.id,
  orgId: r.org_id,
  kind: r.kind,
  source: r.source,
  triggerId: r.trigger_id,
  agentId: r.agent_id,
  batchId: r.batch_id,
  held: isSet(r.held),
  workflowId: r.workflow_id,
  workflowName: r.workflow_name,
  status: r.status,
  ref: r.ref,
  debug: isSet(r.debug),
  params: parseJsonColumn<Record<string, unknown>>(r.params, 'jobs.params') ?? {},
  output: parseJsonColumn<Record<string, unknown>>(r.output, 'jobs.output'),
  exitCode: r.exit_code,
  errorMessage: r.error_message,
  forced: isSet(r.forced),
  forceReason: r.force_reason,
  apiTokenId: r.api_token_id,
  userId: r.user_id,
  timeoutMs: r.timeout_ms,
  createdAt: r.created_at,
  queuedAt: r.queued_at,
  startedAt: r.started_at,
  finishedAt: r.finished_at,
  deadlineAt: r.deadline_at,
  cancelRequestedAt: r.cancel_requested_at,
  cancelAckedAt: r.cancel_acked_at,
  seq: r.seq,
  number: r.number,
  chatOrigin: parseJsonColumn<ChatOrigin>(r.chat_origin, 'jobs.chat_origin'),
});

/**
 * The INSERT every job creation uses (trigger runs, update jobs), with the parameters of
 * `jobInsertParams`: the job's columns, then its organization again for its number.
 *
 * On SQLite `seq` is the rowid, assigned as the next creation number; `number`, the
 * organization's next job number, is read in the same statement (its unique index makes the MAX
 * a seek). Positional parameters: binding twenty named parameters costs ~1.7 µs more per row
 * (docs/performance.md), and this runs once per trigger call. `org_id = +?`, not `= ?`: SQLite
 * 3.54 spends ~4 µs more on every run of a MAX (or ORDER BY ... LIMIT 1) whose indexed column is
 * compared with a bare parameter; the no-op `+` keeps the seek at its old cost (docs/performance.md,
 * "Measured facts").
 *
 * On PostgreSQL `seq` is the identity's next value; `number` comes from the organization's row in
 * job_number_counters, whose lock the transaction holds until it commits, so two coordinators
 * never hand out one number (a missing row starts from the organization's highest number: data
 * copied from SQLite).
 */
export const INSERT_JOB = command((d) =>
  d.name === 'sqlite'
    ? `INSERT INTO jobs (id, org_id, kind, source, trigger_id, agent_id, workflow_id, workflow_name,
        status, ref, debug, params, error_message, forced, force_reason, api_token_id, user_id, timeout_ms,
        created_at, finished_at, chat_origin, batch_id, held, number)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?,
        (SELECT IFNULL(MAX(number), 0) + 1 FROM jobs WHERE org_id = +?))`
    : `WITH n AS (
        INSERT INTO job_number_counters AS c (org_id, last_number)
        VALUES ($24, (SELECT COALESCE(MAX(number), 0) + 1 FROM jobs WHERE org_id = $24))
        ON CONFLICT (org_id) DO UPDATE SET last_number = c.last_number + 1
        RETURNING last_number)
      INSERT INTO jobs (id, org_id, kind, source, trigger_id, agent_id, workflow_id, workflow_name, status, ref,
        debug, params, error_message, forced, force_reason, api_token_id, user_id, timeout_ms, created_at,
        finished_at, chat_origin, batch_id, held, number)
      VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21,
        $22, $23, (SELECT last_number FROM n))`,
);

/** The parameters of INSERT_JOB for a new job. */
export const newJobParams = (job: NewJob) => jobInsertParams(job, job.status, job.errorMessage);

/**
 * The same, with the status decided apart from the job (the admission); one array literal in
 * INSERT_JOB's order, no spreads: this runs once per trigger call.
 */
export const jobInsertParams = (
  job: Omit<NewJob, 'status' | 'errorMessage'>,
  status: NewJob['status'],
  errorMessage: string | null,
): unknown[] => [
  job.id,
  job.orgId,
  job.kind,
  job.source,
  job.triggerId,
  job.agentId,
  job.workflowId,
  job.workflowName,
  status,
  job.ref,
  flag(job.debug),
  JSON.stringify(job.params),
  errorMessage,
  flag(job.forced),
  job.forceReason,
  job.apiTokenId,
  job.userId,
  job.timeoutMs,
  job.createdAt,
  status === 'rejected' ? job.createdAt : null,
  job.chatOrigin ? JSON.stringify(job.chatOrigin) : null,
  job.batchId ?? null,
  flag(job.held ?? false),
  job.orgId,
];

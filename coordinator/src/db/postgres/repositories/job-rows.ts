import type { JobStatus } from '@drover/shared';
import type { ChatOrigin, Job, JobKind, JobSource, NewJob } from '../../../domain/model/jobs.js';
import type { Queryable } from '../pool.js';
import { json, run } from '../rows.js';

/**
 * A row of `jobs` as the pool gives it (flags as booleans, JSON parsed): for the PostgreSQL
 * repository not yet written once for both databases (device-binding-evaluation.ts); the others
 * use db/repositories/job-rows.ts.
 */
export interface JobRow {
  id: string;
  org_id: string;
  kind: JobKind;
  source: JobSource;
  trigger_id: string | null;
  agent_id: string;
  workflow_id: string | null;
  workflow_name: string;
  status: JobStatus;
  ref: string | null;
  debug: boolean;
  params: Record<string, unknown> | null;
  output: Record<string, unknown> | null;
  exit_code: number | null;
  error_message: string | null;
  forced: boolean;
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
  chat_origin: ChatOrigin | null;
}

export const toJob = (r: JobRow): Job => ({
  id: r.id,
  orgId: r.org_id,
  kind: r.kind,
  source: r.source,
  triggerId: r.trigger_id,
  agentId: r.agent_id,
  workflowId: r.workflow_id,
  workflowName: r.workflow_name,
  status: r.status,
  ref: r.ref,
  debug: r.debug,
  params: r.params ?? {},
  output: r.output,
  exitCode: r.exit_code,
  errorMessage: r.error_message,
  forced: r.forced,
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
  chatOrigin: r.chat_origin,
});

/**
 * Many jobs of one organization in one statement: the counter moves by their count at once and
 * they take its numbers in the order given (their `seq` in the same order).
 */
const INSERT_JOBS_SQL = `WITH n AS (
    INSERT INTO job_number_counters AS c (org_id, last_number)
    VALUES ($1, (SELECT COALESCE(MAX(number), 0) FROM jobs WHERE org_id = $1) + cardinality($2::text[]))
    ON CONFLICT (org_id) DO UPDATE SET last_number = c.last_number + cardinality($2::text[])
    RETURNING last_number)
  INSERT INTO jobs (id, org_id, kind, source, trigger_id, agent_id, workflow_id, workflow_name, status, ref, debug,
    params, error_message, forced, force_reason, api_token_id, user_id, timeout_ms, created_at, finished_at,
    chat_origin, number)
  SELECT t.id, $1, t.kind, t.source, t.trigger_id, t.agent_id, t.workflow_id, t.workflow_name, t.status, t.ref,
    t.debug, t.params, t.error_message, t.forced, t.force_reason, t.api_token_id, t.user_id, t.timeout_ms,
    t.created_at, CASE WHEN t.status = 'rejected' THEN t.created_at END, t.chat_origin,
    (SELECT last_number FROM n) - cardinality($2::text[]) + t.ord
  FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[],
    $10::text[], $11::boolean[], $12::json[], $13::text[], $14::boolean[], $15::text[], $16::text[], $17::text[],
    $18::bigint[], $19::timestamptz[], $20::json[])
    WITH ORDINALITY AS t(id, kind, source, trigger_id, agent_id, workflow_id, workflow_name, status, ref, debug,
      params, error_message, forced, force_reason, api_token_id, user_id, timeout_ms, created_at, chat_origin, ord)
  ORDER BY t.ord`;

/** Inserts jobs, one statement per organization, each organization's numbered in the order given. */
export async function insertJobs(db: Queryable, jobs: readonly NewJob[]): Promise<void> {
  const byOrg = new Map<string, NewJob[]>();
  for (const job of jobs) {
    const list = byOrg.get(job.orgId);
    if (list) list.push(job);
    else byOrg.set(job.orgId, [job]);
  }
  for (const [orgId, list] of byOrg) {
    const column = <T>(value: (job: NewJob) => T) => list.map(value);
    await run(db, INSERT_JOBS_SQL, [
      orgId,
      column((j) => j.id),
      column((j) => j.kind),
      column((j) => j.source),
      column((j) => j.triggerId),
      column((j) => j.agentId),
      column((j) => j.workflowId),
      column((j) => j.workflowName),
      column((j) => j.status),
      column((j) => j.ref),
      column((j) => j.debug),
      column((j) => JSON.stringify(j.params)),
      column((j) => j.errorMessage),
      column((j) => j.forced),
      column((j) => j.forceReason),
      column((j) => j.apiTokenId),
      column((j) => j.userId),
      column((j) => j.timeoutMs),
      column((j) => j.createdAt),
      column((j) => json(j.chatOrigin ?? null)),
    ]);
  }
}

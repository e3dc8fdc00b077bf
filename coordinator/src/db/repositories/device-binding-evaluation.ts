import type { AgentStatus } from '../../domain/model/agents.js';
import type {
  BindingEvaluation,
  DeviceBinding,
  EvaluateBinding,
  EvaluationOutcome,
  EvaluationRequest,
} from '../../domain/model/device-bindings.js';
import type { NewJob } from '../../domain/model/jobs.js';
import type { Release } from '../../domain/model/releases.js';
import { all, command, flag, jsonRecords, query, run, type Dialect, type Flow } from '../sql/index.js';
import { maintenanceWindowOf } from './applications.js';
import { toDeviceBinding, type DeviceBindingRow } from './device-binding-rows.js';
import { toJob, type JobRow } from './job-rows.js';
import { toRelease, type ReleaseRow } from './releases.js';
import { withheldOf } from './rollouts.js';

const NONE_WITHHELD: ReadonlySet<string> = new Set();

/** A binding with its application (null when deleted) and its agent's status, as an evaluation reads it. */
interface BindingFactsRow extends DeviceBindingRow {
  app_org_id: string | null;
  app_update_workflow_name: string | null;
  /** JSON text (null: no window). */
  app_maintenance_window: string | null;
  agent_status: AgentStatus | null;
}

/** Among the ids of a JSON array parameter. */
const IN_LIST = (d: Dialect) => d.inJsonArray('?');

/**
 * A read of the rows whose key is among some ids, as two statements: `= ?` for one id (a plain seek;
 * an agent's report evaluates its one binding), a JSON array for several (`match` is the clause).
 */
function byIds<R>(sql: (match: string, d: Dialect) => string) {
  return {
    one: query<R, [string]>((d) => sql('= ?', d)),
    many: query<R, [string]>((d) => sql(IN_LIST(d), d)),
  };
}
function* rowsOf<R>(statement: ReturnType<typeof byIds<R>>, ids: readonly string[]): Flow<R[]> {
  if (ids.length === 0) return [];
  return ids.length === 1 ? yield* all(statement.one, [ids[0]!]) : yield* all(statement.many, [JSON.stringify(ids)]);
}

/**
 * Locks (PostgreSQL) and reads the bindings, in id order, with their applications and agents (in
 * subqueries: only the bindings' rows are locked).
 */
const BINDINGS = byIds<BindingFactsRow>(
  (match, d) => `SELECT b.*,
    (SELECT a.org_id FROM applications a WHERE a.id = b.application_id AND a.deleted_at IS NULL) AS app_org_id,
    (SELECT a.update_workflow_name FROM applications a WHERE a.id = b.application_id AND a.deleted_at IS NULL)
      AS app_update_workflow_name,
    (SELECT a.maintenance_window FROM applications a WHERE a.id = b.application_id AND a.deleted_at IS NULL)
      AS app_maintenance_window,
    (SELECT g.status FROM agents g WHERE g.id = b.agent_id) AS agent_status
  FROM device_bindings b WHERE b.id ${match} ORDER BY b.id ${d.forUpdate}`,
);
const RELEASES_OF = byIds<ReleaseRow>((match) => `SELECT * FROM releases WHERE application_id ${match}`);
const JOBS = byIds<JobRow>((match) => `SELECT * FROM jobs WHERE id ${match}`);
const TIMEOUTS = query<{ agent_id: string; name: string; timeout_ms: number | null }, [string, string]>(
  (d) => `SELECT agent_id, name, timeout_ms FROM workflows
    WHERE agent_id ${IN_LIST(d)} AND name ${IN_LIST(d)} AND removed_at IS NULL`,
);

const CANCELLED = { id: 'text', message: 'text', at: 'timestamptz' };
/** Cancels the jobs still pending among those of the records (CANCELLED); gives their ids. */
const CANCEL_PENDING = query<{ id: string }, [string]>(
  (d) => `UPDATE jobs SET status = 'cancelled', error_message = t.message, finished_at = t.at
   FROM ${d.jsonRecords('?', 't', CANCELLED)}
   WHERE jobs.id = t.id AND jobs.status = 'pending' RETURNING jobs.id`,
);

const JOB_COLUMNS = {
  ord: 'bigint',
  id: 'text',
  kind: 'text',
  source: 'text',
  trigger_id: 'text',
  agent_id: 'text',
  workflow_id: 'text',
  workflow_name: 'text',
  status: 'text',
  ref: 'text',
  debug: 'boolean',
  params: 'json',
  error_message: 'text',
  forced: 'boolean',
  force_reason: 'text',
  api_token_id: 'text',
  user_id: 'text',
  timeout_ms: 'bigint',
  created_at: 'timestamptz',
  chat_origin: 'json',
};
/**
 * Many jobs of one organization (`@jobs`, records of JOB_COLUMNS) in one statement, numbered in
 * their order (`ord`, from 1), their `seq` in the same order. The job number is taken as
 * INSERT_JOB (job-rows.ts) takes it, for all at once: on SQLite from the organization's highest
 * number; on PostgreSQL from its counter row, moved by their count.
 */
const INSERT_JOBS = command<{ orgId: string; jobs: string }>((d) => {
  const insert = `INSERT INTO jobs (id, org_id, kind, source, trigger_id, agent_id, workflow_id, workflow_name,
      status, ref, debug, params, error_message, forced, force_reason, api_token_id, user_id, timeout_ms, created_at,
      finished_at, chat_origin, number)
    SELECT t.id, @orgId, t.kind, t.source, t.trigger_id, t.agent_id, t.workflow_id, t.workflow_name, t.status,
      t.ref, t.debug, t.params, t.error_message, t.forced, t.force_reason, t.api_token_id, t.user_id, t.timeout_ms,
      t.created_at, CASE WHEN t.status = 'rejected' THEN t.created_at END, t.chat_origin`;
  const records = d.jsonRecords('@jobs', 't', JOB_COLUMNS);
  return d.name === 'sqlite'
    ? `${insert}, (SELECT IFNULL(MAX(number), 0) FROM jobs WHERE org_id = +@orgId) + t.ord
      FROM ${records} ORDER BY t.ord`
    : `WITH n AS (
        INSERT INTO job_number_counters AS c (org_id, last_number)
        VALUES (@orgId, (SELECT COALESCE(MAX(number), 0) FROM jobs WHERE org_id = @orgId) + json_array_length(@jobs))
        ON CONFLICT (org_id) DO UPDATE SET last_number = c.last_number + json_array_length(@jobs)
        RETURNING last_number)
      ${insert}, (SELECT last_number FROM n) - json_array_length(@jobs) + t.ord
      FROM ${records} ORDER BY t.ord`;
});
const UPDATE_JOB = {
  job_id: 'text',
  org_id: 'text',
  binding_id: 'text',
  application_id: 'text',
  release_id: 'text',
  created_at: 'timestamptz',
};
const INSERT_UPDATE_JOBS = command<[string]>(
  (d) => `INSERT INTO update_jobs (job_id, org_id, binding_id, application_id, release_id, created_at)
   SELECT t.job_id, t.org_id, t.binding_id, t.application_id, t.release_id, t.created_at
   FROM ${d.jsonRecords('?', 't', UPDATE_JOB)}`,
);
/** The columns an evaluation (and a report's observations) writes back to a binding. */
const STORED = {
  current_release_id: 'text',
  current_version: 'text',
  current_sequence: 'bigint',
  desired_release_id: 'text',
  forced: 'boolean',
  state: 'text',
  error: 'text',
  active_job_id: 'text',
  last_report_at: 'timestamptz',
  failed_attempts: 'bigint',
  retry_at: 'timestamptz',
  postponed_release_id: 'text',
  cancelled_job_id: 'text',
  window_opens_at: 'timestamptz',
  window_closes_at: 'timestamptz',
};
const STORED_ROW = { id: 'text', ...STORED };
const setStored = (value: (column: string) => string) =>
  Object.keys(STORED)
    .map((column) => `${column} = ${value(column)}`)
    .join(', ');
/** Writes one binding back (named parameters: `id` and the STORED columns)... */
const STORE_BINDING = command<Record<string, unknown>>(
  `UPDATE device_bindings SET ${setStored((column) => `@${column}`)} WHERE id = @id`,
);
/** ...or several, in one statement (their records as a JSON array). */
const STORE_BINDINGS = command<[string]>(
  (d) => `UPDATE device_bindings SET ${setStored((column) => `t.${column}`)}
   FROM ${d.jsonRecords('?', 't', STORED_ROW)} WHERE device_bindings.id = t.id`,
);

/** A binding as STORE_BINDING's parameters, and a record of STORE_BINDINGS. */
const stored = (b: DeviceBinding): Record<string, unknown> => ({
  id: b.id,
  current_release_id: b.current?.releaseId ?? null,
  current_version: b.current?.version ?? null,
  current_sequence: b.current?.sequence ?? null,
  desired_release_id: b.desiredReleaseId,
  forced: flag(b.forced),
  state: b.state,
  error: b.error,
  active_job_id: b.activeJobId,
  last_report_at: b.lastReportAt,
  failed_attempts: b.failedAttempts,
  retry_at: b.retryAt,
  postponed_release_id: b.postponedReleaseId,
  cancelled_job_id: b.cancelledJobId,
  window_opens_at: b.windowOpensAt,
  window_closes_at: b.windowClosesAt,
});

/**
 * Evaluates bindings in the caller's transaction, set-based: each read and each write covers every
 * binding of the call in one statement (a publish evaluates 250 at once), so PostgreSQL's round
 * trips do not grow with the bindings. The rows are locked first (PostgreSQL), in id order, so two
 * evaluations of overlapping sets cannot wait on each other and reports, sweeps and publishes
 * reaching several coordinators evaluate a binding one after the other, issuing at most one
 * update job for it (SQLite's single writer runs one evaluation at a time). `evaluateBinding` (the
 * domain's) decides each binding from what was read, exactly as one at a time would.
 *
 * A binding named twice is evaluated twice, in order: the requests are split into rounds in which
 * each binding appears once, and each round reads what the ones before it wrote.
 */
export function* evaluateBindings(
  requests: readonly EvaluationRequest[],
  now: number,
  evaluateBinding: EvaluateBinding,
): Flow<EvaluationOutcome[]> {
  const ids = [...new Set(requests.map((r) => r.bindingId))].sort();
  const releases = new Map<string, Release[]>();
  const outcomes: EvaluationOutcome[] = [];
  for (const [i, round] of rounds(requests).entries()) {
    // The first read locks every binding of the call; later rounds read theirs again.
    const rows = yield* rowsOf(BINDINGS, i === 0 ? ids : round.map((r) => r.bindingId));
    outcomes.push(...(yield* evaluateRound(round, rows, now, releases, evaluateBinding)));
  }
  return outcomes;
}

/** Consecutive runs of requests in which each binding appears once. */
function rounds(requests: readonly EvaluationRequest[]): EvaluationRequest[][] {
  const out: EvaluationRequest[][] = [];
  let current: EvaluationRequest[] = [];
  let seen = new Set<string>();
  for (const request of requests) {
    if (seen.has(request.bindingId)) {
      out.push(current);
      current = [];
      seen = new Set();
    }
    current.push(request);
    seen.add(request.bindingId);
  }
  if (current.length > 0) out.push(current);
  return out;
}

const unique = <T>(values: Iterable<T | null | undefined>): T[] =>
  [...new Set(values)].filter((v): v is T => v !== null && v !== undefined);

function* evaluateRound(
  round: readonly EvaluationRequest[],
  rows: readonly BindingFactsRow[],
  now: number,
  releaseCache: Map<string, Release[]>,
  evaluateBinding: EvaluateBinding,
): Flow<EvaluationOutcome[]> {
  const byId = new Map(rows.map((r) => [r.id, r]));
  const uncached = unique(rows.map((r) => (r.app_org_id === null ? null : r.application_id))).filter(
    (id) => !releaseCache.has(id),
  );
  if (uncached.length > 0) {
    for (const id of uncached) releaseCache.set(id, []);
    for (const r of yield* rowsOf(RELEASES_OF, uncached)) {
      releaseCache.get(r.application_id)!.push(toRelease(r));
    }
  }
  const withheld = yield* withheldOf(rows.map((r) => r.id));
  const jobIds = unique(rows.map((r) => r.active_job_id));
  const jobs = new Map((yield* rowsOf(JOBS, jobIds)).map((j) => [j.id, toJob(j)]));
  const evaluated: { e: BindingEvaluation; appId: string; outcome: EvaluationOutcome }[] = [];
  const outcomes = round.map((request): EvaluationOutcome => {
    const gone: EvaluationOutcome = {
      bindingId: request.bindingId,
      binding: null,
      state: null,
      settled: null,
      createdJobId: null,
      supersededJobId: null,
      repushJobId: null,
      hold: null,
    };
    const row = byId.get(request.bindingId);
    if (!row || row.app_org_id === null || row.app_update_workflow_name === null) return gone;
    const binding = toDeviceBinding(row);
    const e = evaluateBinding({
      request,
      binding,
      app: {
        id: row.application_id,
        orgId: row.app_org_id,
        updateWorkflowName: row.app_update_workflow_name,
        maintenanceWindow: maintenanceWindowOf(row.app_maintenance_window),
      },
      releases: releaseCache.get(row.application_id)!,
      withheld: withheld.get(row.id) ?? NONE_WITHHELD,
      activeJob: (binding.activeJobId && jobs.get(binding.activeJobId)) || null,
      agentStatus: row.agent_status,
      now,
    });
    const outcome = {
      ...gone,
      binding: e.binding,
      state: e.state,
      settled: e.settled,
      createdJobId: e.issue?.job.id ?? null,
      repushJobId: e.repushJobId,
      hold: e.hold,
    };
    evaluated.push({ e, appId: row.application_id, outcome });
    return outcome;
  });

  // A superseded job counts as superseded only if it was still pending (the agent may have taken it).
  const supersedes = evaluated.flatMap(({ e }) => (e.supersede ? [e.supersede] : []));
  if (supersedes.length > 0) {
    const records = supersedes.map((s) => ({ id: s.jobId, message: s.message, at: s.at }));
    const cancelled = new Set((yield* all(CANCEL_PENDING, [jsonRecords(CANCELLED, records)])).map((r) => r.id));
    for (const { e, outcome } of evaluated) {
      if (e.supersede && cancelled.has(e.supersede.jobId)) outcome.supersededJobId = e.supersede.jobId;
    }
  }
  yield* issueJobs(
    evaluated.flatMap(({ e, appId }) => (e.issue ? [{ ...e.issue, bindingId: e.binding.id, appId }] : [])),
  );
  const bindings = evaluated.map(({ e }) => stored(e.binding));
  if (bindings.length === 1) yield* run(STORE_BINDING, bindings[0]!);
  else if (bindings.length > 1) yield* run(STORE_BINDINGS, [jsonRecords(STORED_ROW, bindings)]);
  return outcomes;
}

/**
 * The update jobs an evaluation issues, each with the timeout of its agent's active workflow of
 * that name, one statement per organization, and their `update_jobs` rows.
 */
function* issueJobs(
  issues: readonly (NonNullable<BindingEvaluation['issue']> & { bindingId: string; appId: string })[],
): Flow<void> {
  if (issues.length === 0) return;
  const timeouts = yield* all(TIMEOUTS, [
    JSON.stringify(unique(issues.map((i) => i.job.agentId))),
    JSON.stringify(unique(issues.map((i) => i.job.workflowName))),
  ]);
  const timeoutOf = new Map(timeouts.map((w) => [`${w.agent_id}\u0000${w.name}`, w.timeout_ms]));
  const byOrg = new Map<string, Omit<NewJob, 'timeoutMs'>[]>();
  for (const { job } of issues) byOrg.set(job.orgId, [...(byOrg.get(job.orgId) ?? []), job]);
  for (const [orgId, jobs] of byOrg) {
    const records = jobs.map((j, i) => ({
      ord: i + 1,
      id: j.id,
      kind: j.kind,
      source: j.source,
      trigger_id: j.triggerId,
      agent_id: j.agentId,
      workflow_id: j.workflowId,
      workflow_name: j.workflowName,
      status: j.status,
      ref: j.ref,
      debug: j.debug,
      params: j.params,
      error_message: j.errorMessage,
      forced: j.forced,
      force_reason: j.forceReason,
      api_token_id: j.apiTokenId,
      user_id: j.userId,
      timeout_ms: timeoutOf.get(`${j.agentId}\u0000${j.workflowName}`) ?? null,
      created_at: j.createdAt,
      chat_origin: j.chatOrigin ?? null,
    }));
    yield* run(INSERT_JOBS, { orgId, jobs: jsonRecords(JOB_COLUMNS, records) });
  }
  const updateJobs = issues.map((i) => ({
    job_id: i.job.id,
    org_id: i.job.orgId,
    binding_id: i.bindingId,
    application_id: i.appId,
    release_id: i.releaseId,
    created_at: i.job.createdAt,
  }));
  yield* run(INSERT_UPDATE_JOBS, [jsonRecords(UPDATE_JOB, updateJobs)]);
}

import type { AgentStatus } from '../../../domain/model/agents.js';
import type {
  BindingEvaluation,
  EvaluateBinding,
  EvaluationOutcome,
  EvaluationRequest,
} from '../../../domain/model/device-bindings.js';
import type { Release } from '../../../domain/model/releases.js';
import type { PgClient } from '../pool.js';
import { all, run } from '../rows.js';
import { cancelPendingJobs, storeBindings, toDeviceBinding, type DeviceBindingRow } from './device-binding-rows.js';
import { insertJobs, toJob, type JobRow } from './job-rows.js';
import { toRelease, type ReleaseRow } from '../../repositories/releases.js';

/** A binding with its application (null when deleted) and its agent's status, as an evaluation reads it. */
interface BindingFactsRow extends DeviceBindingRow {
  app_org_id: string | null;
  app_update_workflow_name: string | null;
  agent_status: AgentStatus | null;
}

/** Locks and reads the bindings (in id order) with their applications and agents, in one statement. */
const READ_BINDINGS = `SELECT b.*, a.org_id AS app_org_id, a.update_workflow_name AS app_update_workflow_name,
    (SELECT g.status FROM agents g WHERE g.id = b.agent_id) AS agent_status
  FROM device_bindings b LEFT JOIN applications a ON a.id = b.application_id AND a.deleted_at IS NULL
  WHERE b.id = ANY($1::text[]) ORDER BY b.id FOR UPDATE OF b`;

/**
 * Evaluates bindings inside the caller's transaction, set-based: each read and each write covers
 * every binding of the call in one statement (a publish evaluates 250 at once), so the round
 * trips to PostgreSQL do not grow with the bindings. The rows are locked first, in id order (two
 * evaluations of overlapping sets cannot wait on each other) and read with their applications
 * and agents, and `evaluateBinding` (the domain's) decides each binding from what was read,
 * exactly as one at a time would.
 *
 * A binding named twice is evaluated twice, in order: the requests are split into rounds in
 * which each binding appears once, and each round reads what the ones before it wrote.
 */
export async function evaluateBindings(
  tx: PgClient,
  requests: readonly EvaluationRequest[],
  now: number,
  evaluateBinding: EvaluateBinding,
): Promise<EvaluationOutcome[]> {
  const ids = [...new Set(requests.map((r) => r.bindingId))].sort();
  const releases = new Map<string, Release[]>();
  const outcomes: EvaluationOutcome[] = [];
  for (const [i, round] of rounds(requests).entries()) {
    // The first read locks every binding of the call; later rounds read theirs again.
    const rows = await all<BindingFactsRow>(tx, READ_BINDINGS, [i === 0 ? ids : round.map((r) => r.bindingId)]);
    outcomes.push(...(await evaluateRound(tx, round, rows, now, releases, evaluateBinding)));
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

async function evaluateRound(
  tx: PgClient,
  round: readonly EvaluationRequest[],
  rows: readonly BindingFactsRow[],
  now: number,
  releaseCache: Map<string, Release[]>,
  evaluateBinding: EvaluateBinding,
): Promise<EvaluationOutcome[]> {
  const byId = new Map(rows.map((r) => [r.id, r]));
  const uncached = unique(rows.map((r) => (r.app_org_id === null ? null : r.application_id))).filter(
    (id) => !releaseCache.has(id),
  );
  if (uncached.length > 0) {
    for (const id of uncached) releaseCache.set(id, []);
    const read = await all<ReleaseRow>(tx, 'SELECT * FROM releases WHERE application_id = ANY($1::text[])', [uncached]);
    for (const r of read) releaseCache.get(r.application_id)!.push(toRelease(r));
  }
  const jobIds = unique(rows.map((r) => r.active_job_id));
  const jobs = new Map(
    (jobIds.length === 0 ? [] : await all<JobRow>(tx, 'SELECT * FROM jobs WHERE id = ANY($1::text[])', [jobIds])).map(
      (j) => [j.id, toJob(j)],
    ),
  );
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
      app: { id: row.application_id, orgId: row.app_org_id, updateWorkflowName: row.app_update_workflow_name },
      releases: releaseCache.get(row.application_id)!,
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
  const cancelled = await cancelPendingJobs(
    tx,
    evaluated.flatMap(({ e }) => (e.supersede ? [e.supersede] : [])),
  );
  for (const { e, outcome } of evaluated) {
    if (e.supersede && cancelled.has(e.supersede.jobId)) outcome.supersededJobId = e.supersede.jobId;
  }
  await issueJobs(
    tx,
    evaluated.flatMap(({ e, appId }) => (e.issue ? [{ ...e.issue, bindingId: e.binding.id, appId }] : [])),
  );
  await storeBindings(
    tx,
    evaluated.map(({ e }) => e.binding),
  );
  return outcomes;
}

/**
 * The update jobs an evaluation issues, each with the timeout of its agent's active workflow of
 * that name, and their `update_jobs` rows.
 */
async function issueJobs(
  tx: PgClient,
  issues: readonly (NonNullable<BindingEvaluation['issue']> & { bindingId: string; appId: string })[],
): Promise<void> {
  if (issues.length === 0) return;
  const pairs = issues.map(({ job }) => [job.agentId, job.workflowName] as const);
  const timeouts = await all<{ agent_id: string; name: string; timeout_ms: number | null }>(
    tx,
    `SELECT w.agent_id, w.name, w.timeout_ms FROM workflows w
       JOIN unnest($1::text[], $2::text[]) AS t(agent_id, name) ON w.agent_id = t.agent_id AND w.name = t.name
     WHERE w.removed_at IS NULL`,
    [pairs.map(([agentId]) => agentId), pairs.map(([, name]) => name)],
  );
  const timeoutOf = new Map(timeouts.map((w) => [`${w.agent_id}\u0000${w.name}`, w.timeout_ms]));
  await insertJobs(
    tx,
    issues.map(({ job }) => ({ ...job, timeoutMs: timeoutOf.get(`${job.agentId}\u0000${job.workflowName}`) ?? null })),
  );
  await run(
    tx,
    `INSERT INTO update_jobs (job_id, org_id, binding_id, application_id, release_id, created_at)
     SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::timestamptz[])`,
    [
      issues.map((i) => i.job.id),
      issues.map((i) => i.job.orgId),
      issues.map((i) => i.bindingId),
      issues.map((i) => i.appId),
      issues.map((i) => i.releaseId),
      issues.map((i) => i.job.createdAt),
    ],
  );
}

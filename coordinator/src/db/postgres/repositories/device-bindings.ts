import type { DeviceState } from '@drover/shared';
import type { AgentStatus } from '../../../domain/model/agents.js';
import type {
  BindResult,
  DeviceBinding,
  DeviceBindingRepository,
  EvaluateBinding,
  EvaluationOutcome,
  EvaluationRequest,
} from '../../../domain/model/device-bindings.js';
import type { Release } from '../../../domain/model/releases.js';
import type { PgClient, PgPool, Queryable } from '../pool.js';
import { all, one, run } from '../rows.js';
import { inTransaction } from '../transaction.js';
import { insertJob, toJob, type JobRow } from './job-rows.js';
import { toRelease, type ReleaseRow } from './releases.js';

interface DeviceBindingRow {
  id: string;
  org_id: string;
  application_id: string;
  agent_id: string;
  channel: string;
  current_release_id: string | null;
  current_version: string | null;
  current_sequence: number | null;
  desired_release_id: string | null;
  forced: boolean;
  state: DeviceState | null;
  error: string | null;
  active_job_id: string | null;
  last_report_at: string | null;
  failed_attempts: number;
  retry_at: string | null;
  postponed_release_id: string | null;
  cancelled_job_id: string | null;
  created_at: string;
}

const toDeviceBinding = (r: DeviceBindingRow): DeviceBinding => ({
  id: r.id,
  orgId: r.org_id,
  applicationId: r.application_id,
  agentId: r.agent_id,
  channel: r.channel,
  current:
    r.current_sequence === null
      ? null
      : { releaseId: r.current_release_id, version: r.current_version ?? '', sequence: r.current_sequence },
  desiredReleaseId: r.desired_release_id,
  forced: r.forced,
  state: r.state,
  error: r.error,
  activeJobId: r.active_job_id,
  lastReportAt: r.last_report_at,
  failedAttempts: r.failed_attempts,
  retryAt: r.retry_at,
  postponedReleaseId: r.postponed_release_id,
  cancelledJobId: r.cancelled_job_id,
  createdAt: r.created_at,
});

/** Writes an evaluation's result (and a report's observations) back to the row. */
const store = (db: Queryable, b: DeviceBinding) =>
  run(
    db,
    `UPDATE device_bindings SET current_release_id = $2, current_version = $3, current_sequence = $4,
       desired_release_id = $5, forced = $6, state = $7, error = $8, active_job_id = $9, last_report_at = $10,
       failed_attempts = $11, retry_at = $12, postponed_release_id = $13, cancelled_job_id = $14
     WHERE id = $1`,
    [
      b.id,
      b.current?.releaseId ?? null,
      b.current?.version ?? null,
      b.current?.sequence ?? null,
      b.desiredReleaseId,
      b.forced,
      b.state,
      b.error,
      b.activeJobId,
      b.lastReportAt,
      b.failedAttempts,
      b.retryAt,
      b.postponedReleaseId,
      b.cancelledJobId,
    ],
  );

/** Cancels a pending job; 1 when it was still pending. */
const cancelPending = (db: Queryable, id: string, message: string, at: string) =>
  run(
    db,
    "UPDATE jobs SET status = 'cancelled', error_message = $2, finished_at = $3 WHERE id = $1 AND status = 'pending'",
    [id, message, at],
  );

const ofAgent = `SELECT b.* FROM device_bindings b
  JOIN applications a ON a.id = b.application_id AND a.deleted_at IS NULL WHERE b.agent_id = $1`;

/**
 * `evaluateBinding` decides each evaluation (the domain's, domain/ota/evaluate-binding.ts). An
 * evaluation locks the rows of the bindings it evaluates (in id order, so two evaluations of
 * overlapping sets cannot wait on each other), so reports, sweeps and publishes reaching
 * several coordinators at once evaluate a binding one after the other and issue at most one
 * update job for it. Binding agents locks the application's row: two coordinators binding the
 * same agent take turns (the unique index on (application, agent) backs it).
 */
export function createDeviceBindingRepository(pool: PgPool, evaluateBinding: EvaluateBinding): DeviceBindingRepository {
  const byId = async (db: Queryable, id: string) =>
    one<DeviceBindingRow>(db, 'SELECT * FROM device_bindings WHERE id = $1', [id]);
  const inApp = async (appId: string, id: string) => {
    const row = await one<DeviceBindingRow>(
      pool,
      'SELECT * FROM device_bindings WHERE application_id = $1 AND id = $2',
      [appId, id],
    );
    return row ? toDeviceBinding(row) : null;
  };

  async function evaluateOne(
    tx: PgClient,
    req: EvaluationRequest,
    now: number,
    releaseCache: Map<string, Release[]>,
  ): Promise<EvaluationOutcome> {
    const gone: EvaluationOutcome = {
      bindingId: req.bindingId,
      binding: null,
      state: null,
      settled: null,
      createdJobId: null,
      supersededJobId: null,
      repushJobId: null,
      hold: null,
    };
    const row = await byId(tx, req.bindingId);
    const app = row
      ? await one<{ id: string; org_id: string; update_workflow_name: string }>(
          tx,
          'SELECT id, org_id, update_workflow_name FROM applications WHERE id = $1 AND deleted_at IS NULL',
          [row.application_id],
        )
      : null;
    if (!row || !app) return gone;
    const binding = toDeviceBinding(row);
    let releases = releaseCache.get(app.id);
    if (!releases) {
      releases = (await all<ReleaseRow>(tx, 'SELECT * FROM releases WHERE application_id = $1', [app.id])).map(
        toRelease,
      );
      releaseCache.set(app.id, releases);
    }
    const activeJob = binding.activeJobId
      ? await one<JobRow>(tx, 'SELECT * FROM jobs WHERE id = $1', [binding.activeJobId])
      : null;
    const agent = await one<{ status: AgentStatus }>(tx, 'SELECT status FROM agents WHERE id = $1', [binding.agentId]);
    const e = evaluateBinding({
      request: req,
      binding,
      app: { id: app.id, orgId: app.org_id, updateWorkflowName: app.update_workflow_name },
      releases,
      activeJob: activeJob ? toJob(activeJob) : null,
      agentStatus: agent?.status ?? null,
      now,
    });
    let supersededJobId: string | null = null;
    if (e.supersede && (await cancelPending(tx, e.supersede.jobId, e.supersede.message, e.supersede.at)) === 1) {
      supersededJobId = e.supersede.jobId;
    }
    if (e.issue) {
      const { job, releaseId } = e.issue;
      const workflow = await one<{ timeout_ms: number | null }>(
        tx,
        'SELECT timeout_ms FROM workflows WHERE agent_id = $1 AND name = $2 AND removed_at IS NULL',
        [job.agentId, job.workflowName],
      );
      await insertJob(tx, { ...job, timeoutMs: workflow?.timeout_ms ?? null }, job.status, job.errorMessage);
      await run(
        tx,
        `INSERT INTO update_jobs (job_id, org_id, binding_id, application_id, release_id, created_at)
         VALUES ($1, $2, $3, $4, $5, $6)`,
        [job.id, job.orgId, binding.id, app.id, releaseId, job.createdAt],
      );
    }
    await store(tx, e.binding);
    return {
      ...gone,
      binding: e.binding,
      state: e.state,
      settled: e.settled,
      createdJobId: e.issue?.job.id ?? null,
      supersededJobId,
      repushJobId: e.repushJobId,
      hold: e.hold,
    };
  }

  return {
    bind(input) {
      return inTransaction(pool, async (tx): Promise<BindResult> => {
        await run(tx, 'SELECT 1 FROM applications WHERE id = $1 FOR NO KEY UPDATE', [input.applicationId]);
        const ids = input.bindings.map((b) => b.agentId);
        const taken = (
          await all<{ agent_id: string }>(
            tx,
            'SELECT agent_id FROM device_bindings WHERE application_id = $1 AND agent_id = ANY($2::text[])',
            [input.applicationId, ids],
          )
        ).map((r) => r.agent_id);
        if (taken.length > 0) return { outcome: 'already_bound', agentIds: ids.filter((id) => taken.includes(id)) };
        const bindings: DeviceBinding[] = [];
        for (const b of input.bindings) {
          const row = await one<DeviceBindingRow>(
            tx,
            `INSERT INTO device_bindings (id, org_id, application_id, agent_id, channel, created_at)
             VALUES ($1, $2, $3, $4, $5, $6) RETURNING *`,
            [b.id, input.orgId, input.applicationId, b.agentId, input.channel, input.at],
          );
          bindings.push(toDeviceBinding(row!));
        }
        return { outcome: 'bound', bindings };
      });
    },
    findInApp: inApp,
    async listByApp(applicationId) {
      const rows = await all<DeviceBindingRow>(
        pool,
        'SELECT * FROM device_bindings WHERE application_id = $1 ORDER BY seq',
        [applicationId],
      );
      return rows.map(toDeviceBinding);
    },
    async listByAgent(agentId) {
      return (await all<DeviceBindingRow>(pool, `${ofAgent} ORDER BY b.seq`, [agentId])).map(toDeviceBinding);
    },
    async findForAgent(agentId, applicationId) {
      const row = await one<DeviceBindingRow>(pool, `${ofAgent} AND b.application_id = $2`, [agentId, applicationId]);
      return row ? toDeviceBinding(row) : null;
    },
    async changeChannel(applicationId, id, channel) {
      await run(pool, 'UPDATE device_bindings SET channel = $3 WHERE application_id = $1 AND id = $2', [
        applicationId,
        id,
        channel,
      ]);
      return inApp(applicationId, id);
    },
    unbind(applicationId, id, at, message) {
      return inTransaction(pool, async (tx) => {
        const row = await one<DeviceBindingRow>(
          tx,
          'SELECT * FROM device_bindings WHERE application_id = $1 AND id = $2 FOR UPDATE',
          [applicationId, id],
        );
        if (!row) return null;
        let cancelledJobId: string | null = null;
        if (row.active_job_id && (await cancelPending(tx, row.active_job_id, message, at)) === 1) {
          cancelledJobId = row.active_job_id;
        }
        await run(tx, 'DELETE FROM device_bindings WHERE id = $1', [id]);
        return { binding: toDeviceBinding(row), cancelledJobId };
      });
    },
    async idsToEvaluate(applicationId, channel, releaseId) {
      const rows = await all<{ id: string }>(
        pool,
        `SELECT id FROM device_bindings WHERE application_id = $1 AND channel = $2
         UNION SELECT id FROM device_bindings WHERE application_id = $1 AND current_release_id = $3`,
        [applicationId, channel, releaseId],
      );
      return rows.map((r) => r.id);
    },
    async idsDue(now, limit) {
      const rows = await all<{ id: string }>(
        pool,
        `SELECT id FROM device_bindings WHERE retry_at IS NOT NULL AND retry_at <= $1 AND active_job_id IS NULL
         UNION
         SELECT b.id FROM device_bindings b JOIN jobs j ON j.id = b.active_job_id
           WHERE b.active_job_id IS NOT NULL AND j.status NOT IN ('pending', 'queued', 'running')
         LIMIT $2`,
        [now, limit],
      );
      return rows.map((r) => r.id);
    },
    countByState() {
      return all<{ state: DeviceState | null; count: number }>(
        pool,
        `SELECT b.state AS state, count(*) AS count FROM device_bindings b
           JOIN applications a ON a.id = b.application_id WHERE a.deleted_at IS NULL GROUP BY b.state`,
      );
    },
    async bindingOfActiveJob(jobId) {
      return (
        (await one<{ id: string }>(pool, 'SELECT id FROM device_bindings WHERE active_job_id = $1', [jobId]))?.id ??
        null
      );
    },
    async applicationOfUpdateJob(jobId) {
      const row = await one<{ application_id: string }>(
        pool,
        'SELECT application_id FROM update_jobs WHERE job_id = $1',
        [jobId],
      );
      return row?.application_id ?? null;
    },
    evaluate(requests, now) {
      return inTransaction(pool, async (tx) => {
        const ids = [...new Set(requests.map((r) => r.bindingId))].sort();
        await all(tx, 'SELECT id FROM device_bindings WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE', [ids]);
        const cache = new Map<string, Release[]>();
        const outcomes: EvaluationOutcome[] = [];
        for (const r of requests) outcomes.push(await evaluateOne(tx, r, now, cache));
        return outcomes;
      });
    },
  };
}

import type { DeviceState } from '@drover/shared';
import type {
  BindResult,
  DeviceBinding,
  DeviceBindingRepository,
  EvaluateBinding,
} from '../../../domain/model/device-bindings.js';
import type { PgPool } from '../pool.js';
import { all, one, run } from '../rows.js';
import { inTransaction } from '../transaction.js';
import { evaluateBindings } from './device-binding-evaluation.js';
import { cancelPending, toDeviceBinding, type DeviceBindingRow } from './device-binding-rows.js';

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
  const inApp = async (appId: string, id: string) => {
    const row = await one<DeviceBindingRow>(
      pool,
      'SELECT * FROM device_bindings WHERE application_id = $1 AND id = $2',
      [appId, id],
    );
    return row ? toDeviceBinding(row) : null;
  };

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
    async applicationsOfUpdateJobs(jobIds) {
      if (jobIds.length === 0) return [];
      return all<{ jobId: string; applicationId: string }>(
        pool,
        'SELECT job_id AS "jobId", application_id AS "applicationId" FROM update_jobs WHERE job_id = ANY($1::text[])',
        [jobIds],
      );
    },
    evaluate(requests, now) {
      return inTransaction(pool, (tx) => evaluateBindings(tx, requests, now, evaluateBinding));
    },
  };
}

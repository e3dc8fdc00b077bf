import type { DeviceState } from '@drover/shared';
import type { AgentStatus } from '../../domain/model/agents.js';
import type {
  BindingEvaluation,
  BindInput,
  BindResult,
  DeviceBindingRepository,
  EvaluateBinding,
  EvaluationOutcome,
  EvaluationRequest,
} from '../../domain/model/device-bindings.js';
import type { Release } from '../../domain/model/releases.js';
import {
  INSERT_BINDING_SQL,
  toDeviceBinding,
  UPDATE_BINDING_SQL,
  updateBindingParams,
  type DeviceBindingRow,
} from './device-binding-rows.js';
import type { SqliteDatabase } from '../sql/sqlite.js';
import { INSERT_JOB, newJobParams, toJob, type JobRow } from './job-rows.js';
import { toRelease, type ReleaseRow } from './releases.js';

interface AppFacts {
  id: string;
  org_id: string;
  update_workflow_name: string;
}

/** `evaluateBinding` decides each evaluation (the domain's, domain/ota/evaluate-binding.ts). */
export function createDeviceBindingRepository(
  database: SqliteDatabase,
  evaluateBinding: EvaluateBinding,
): DeviceBindingRepository {
  const { db } = database;
  const insert = db.prepare(INSERT_BINDING_SQL);
  const update = db.prepare(UPDATE_BINDING_SQL);
  const byId = db.prepare<[string], DeviceBindingRow>('SELECT * FROM device_bindings WHERE id = ?');
  const inApp = db.prepare<[string, string], DeviceBindingRow>(
    'SELECT * FROM device_bindings WHERE application_id = ? AND id = ?',
  );
  const ofApp = db.prepare<[string], DeviceBindingRow>(
    'SELECT * FROM device_bindings WHERE application_id = ? ORDER BY rowid',
  );
  const ofAgent = db.prepare<[string], DeviceBindingRow>(
    `SELECT b.* FROM device_bindings b JOIN applications a ON a.id = b.application_id AND a.deleted_at IS NULL
     WHERE b.agent_id = ? ORDER BY b.rowid`,
  );
  const forAgent = db.prepare<[string, string], DeviceBindingRow>(
    `SELECT b.* FROM device_bindings b JOIN applications a ON a.id = b.application_id AND a.deleted_at IS NULL
     WHERE b.agent_id = ? AND b.application_id = ?`,
  );
  const alreadyBound = db.prepare<[string, string], { agent_id: string }>(
    `SELECT agent_id FROM device_bindings WHERE application_id = ? AND agent_id IN (SELECT value FROM json_each(?))`,
  );
  const setChannel = db.prepare('UPDATE device_bindings SET channel = ? WHERE application_id = ? AND id = ?');
  const remove = db.prepare('DELETE FROM device_bindings WHERE id = ?');
  const perState = db.prepare<[], { state: DeviceState | null; count: number }>(
    `SELECT b.state AS state, count(*) AS count FROM device_bindings b
       JOIN applications a ON a.id = b.application_id WHERE a.deleted_at IS NULL GROUP BY b.state`,
  );
  const concerned = db.prepare<[{ appId: string; channel: string; releaseId: string }], { id: string }>(
    `SELECT id FROM device_bindings WHERE application_id = @appId AND channel = @channel
     UNION SELECT id FROM device_bindings WHERE application_id = @appId AND current_release_id = @releaseId`,
  );
  const due = db.prepare<[{ now: string; limit: number }], { id: string }>(
    `SELECT id FROM device_bindings WHERE retry_at IS NOT NULL AND retry_at <= @now AND active_job_id IS NULL
     UNION
     SELECT b.id FROM device_bindings b JOIN jobs j ON j.id = b.active_job_id
       WHERE b.active_job_id IS NOT NULL AND j.status NOT IN ('pending', 'queued', 'running')
     LIMIT @limit`,
  );
  const ofActiveJob = db.prepare<[string], { id: string }>('SELECT id FROM device_bindings WHERE active_job_id = ?');
  const appsOfJobs = db.prepare<[string], { jobId: string; applicationId: string }>(
    `SELECT job_id AS jobId, application_id AS applicationId FROM update_jobs
     WHERE job_id IN (SELECT value FROM json_each(?))`,
  );
  const appFacts = db.prepare<[string], AppFacts>(
    'SELECT id, org_id, update_workflow_name FROM applications WHERE id = ? AND deleted_at IS NULL',
  );
  const releasesOf = db.prepare<[string], ReleaseRow>('SELECT * FROM releases WHERE application_id = ?');
  const agentStatus = db.prepare<[string], { status: AgentStatus }>('SELECT status FROM agents WHERE id = ?');
  const jobById = db.prepare<[string], JobRow>('SELECT * FROM jobs WHERE id = ?');
  const workflowTimeout = db.prepare<[string, string], { timeout_ms: number | null }>(
    'SELECT timeout_ms FROM workflows WHERE agent_id = ? AND name = ? AND removed_at IS NULL',
  );
  const cancelPending = db.prepare(
    `UPDATE jobs SET status = 'cancelled', error_message = @message, finished_at = @at
     WHERE id = @id AND status = 'pending'`,
  );
  const insertJob = database.prepare(INSERT_JOB);
  const insertUpdateJob = db.prepare(
    `INSERT INTO update_jobs (job_id, org_id, binding_id, application_id, release_id, created_at)
     VALUES (?, ?, ?, ?, ?, ?)`,
  );

  const bind = db.transaction((input: BindInput): BindResult => {
    const ids = input.bindings.map((b) => b.agentId);
    const taken = alreadyBound.all(input.applicationId, JSON.stringify(ids)).map((r) => r.agent_id);
    if (taken.length > 0) return { outcome: 'already_bound', agentIds: ids.filter((id) => taken.includes(id)) };
    for (const b of input.bindings) {
      insert.run({
        id: b.id,
        orgId: input.orgId,
        applicationId: input.applicationId,
        agentId: b.agentId,
        channel: input.channel,
        createdAt: input.at,
      });
    }
    return {
      outcome: 'bound',
      bindings: input.bindings.map((b) => toDeviceBinding(byId.get(b.id) as DeviceBindingRow)),
    };
  });

  const unbind = db.transaction((appId: string, id: string, at: string, message: string) => {
    const row = inApp.get(appId, id);
    if (!row) return null;
    let cancelledJobId: string | null = null;
    if (row.active_job_id && cancelPending.run({ id: row.active_job_id, message, at }).changes === 1) {
      cancelledJobId = row.active_job_id;
    }
    remove.run(id);
    return { binding: toDeviceBinding(row), cancelledJobId };
  });

  const insertIssued = (issue: NonNullable<BindingEvaluation['issue']>, bindingId: string, appId: string) => {
    const { job } = issue;
    const timeoutMs = workflowTimeout.get(job.agentId, job.workflowName)?.timeout_ms ?? null;
    insertJob.run(newJobParams({ ...job, timeoutMs }));
    insertUpdateJob.run(job.id, job.orgId, bindingId, appId, issue.releaseId, job.createdAt);
  };

  const evaluateOne = (req: EvaluationRequest, now: number, releaseCache: Map<string, Release[]>) => {
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
    const row = byId.get(req.bindingId);
    const app = row ? appFacts.get(row.application_id) : undefined;
    if (!row || !app) return gone;
    const binding = toDeviceBinding(row);
    let releases = releaseCache.get(app.id);
    if (!releases) {
      releases = releasesOf.all(app.id).map(toRelease);
      releaseCache.set(app.id, releases);
    }
    const activeJob = binding.activeJobId ? jobById.get(binding.activeJobId) : undefined;
    const e = evaluateBinding({
      request: req,
      binding,
      app: { id: app.id, orgId: app.org_id, updateWorkflowName: app.update_workflow_name },
      releases,
      activeJob: activeJob ? toJob(activeJob) : null,
      agentStatus: agentStatus.get(binding.agentId)?.status ?? null,
      now,
    });
    let supersededJobId: string | null = null;
    if (
      e.supersede &&
      cancelPending.run({ id: e.supersede.jobId, message: e.supersede.message, at: e.supersede.at }).changes === 1
    ) {
      supersededJobId = e.supersede.jobId;
    }
    if (e.issue) insertIssued(e.issue, binding.id, app.id);
    update.run(updateBindingParams(e.binding));
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
  };

  const evaluate = db.transaction((requests: readonly EvaluationRequest[], now: number) => {
    const cache = new Map<string, Release[]>();
    return requests.map((r) => evaluateOne(r, now, cache));
  });

  const one = (row: DeviceBindingRow | undefined) => (row ? toDeviceBinding(row) : null);

  return {
    async bind(input) {
      return bind.immediate(input);
    },
    async findInApp(applicationId, id) {
      return one(inApp.get(applicationId, id));
    },
    async listByApp(applicationId) {
      return ofApp.all(applicationId).map(toDeviceBinding);
    },
    async listByAgent(agentId) {
      return ofAgent.all(agentId).map(toDeviceBinding);
    },
    async findForAgent(agentId, applicationId) {
      return one(forAgent.get(agentId, applicationId));
    },
    async changeChannel(applicationId, id, channel) {
      setChannel.run(channel, applicationId, id);
      return one(inApp.get(applicationId, id));
    },
    async unbind(applicationId, id, at, message) {
      return unbind.immediate(applicationId, id, at, message);
    },
    async idsToEvaluate(applicationId, channel, releaseId) {
      return concerned.all({ appId: applicationId, channel, releaseId }).map((r) => r.id);
    },
    async idsDue(now, limit) {
      return due.all({ now, limit }).map((r) => r.id);
    },
    async countByState() {
      return perState.all();
    },
    async bindingOfActiveJob(jobId) {
      return ofActiveJob.get(jobId)?.id ?? null;
    },
    async applicationsOfUpdateJobs(jobIds) {
      if (jobIds.length === 0) return [];
      return appsOfJobs.all(JSON.stringify(jobIds));
    },
    async evaluate(requests, now) {
      return evaluate.immediate(requests, now);
    },
  };
}

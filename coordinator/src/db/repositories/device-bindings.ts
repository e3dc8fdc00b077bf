import type {
  BindInput,
  BindResult,
  DeviceBinding,
  DeviceBindingRepository,
  EvaluationOutcome,
  EvaluationRequest,
  ReportWrite,
} from '../../domain/model/device-bindings.js';
import type { Release } from '../../domain/model/releases.js';
import { deployParams, releaseOfDeployParams } from '../../domain/ota/deploy-job.js';
import { forceReasonText, type DesiredState } from '../../domain/ota/desired-state.js';
import { planEvaluation, type ActiveJobFacts } from '../../domain/ota/evaluation.js';
import { isoAt } from '../../util/clock.js';
import { newTimeOrderedId } from '../../util/ids.js';
import type { Db } from '../database.js';
import {
  INSERT_BINDING_SQL,
  toDeviceBinding,
  UPDATE_BINDING_SQL,
  updateBindingParams,
  type DeviceBindingRow,
} from './device-binding-rows.js';
import { INSERT_JOB_SQL, newJobParams, toJob, type JobRow } from './job-rows.js';
import { toRelease, type ReleaseRow } from './releases.js';

interface AppFacts {
  id: string;
  org_id: string;
  update_workflow_name: string;
}

export function createDeviceBindingRepository(db: Db): DeviceBindingRepository {
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
  const appOfJob = db.prepare<[string], { application_id: string }>(
    'SELECT application_id FROM update_jobs WHERE job_id = ?',
  );
  const appFacts = db.prepare<[string], AppFacts>(
    'SELECT id, org_id, update_workflow_name FROM applications WHERE id = ? AND deleted_at IS NULL',
  );
  const releasesOf = db.prepare<[string], ReleaseRow>('SELECT * FROM releases WHERE application_id = ?');
  const agentStatus = db.prepare<[string], { status: string }>('SELECT status FROM agents WHERE id = ?');
  const jobById = db.prepare<[string], JobRow>('SELECT * FROM jobs WHERE id = ?');
  const workflowTimeout = db.prepare<[string, string], { timeout_ms: number | null }>(
    'SELECT timeout_ms FROM workflows WHERE agent_id = ? AND name = ? AND removed_at IS NULL',
  );
  const cancelPending = db.prepare(
    `UPDATE jobs SET status = 'cancelled', error_message = @message, finished_at = @at
     WHERE id = @id AND status = 'pending'`,
  );
  const insertJob = db.prepare(INSERT_JOB_SQL);
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

  /** Creates the update job of `release` for the binding; returns its id. */
  const issueJob = (app: AppFacts, binding: DeviceBinding, release: Release, state: DesiredState, now: number) => {
    const id = newTimeOrderedId(now);
    const createdAt = isoAt(now);
    const timeout = workflowTimeout.get(binding.agentId, app.update_workflow_name);
    insertJob.run(
      newJobParams({
        id,
        orgId: app.org_id,
        kind: 'update',
        triggerId: null,
        agentId: binding.agentId,
        workflowId: null,
        workflowName: app.update_workflow_name,
        status: 'pending',
        ref: null,
        debug: false,
        params: { ...deployParams(release, state.forced) },
        errorMessage: null,
        forced: state.forced,
        forceReason: forceReasonText(state),
        apiTokenId: null,
        userId: null,
        timeoutMs: timeout?.timeout_ms ?? null,
        createdAt,
      }),
    );
    insertUpdateJob.run(id, app.org_id, binding.id, app.id, release.id, createdAt);
    return id;
  };

  const activeJobFacts = (jobId: string | null): ActiveJobFacts | null => {
    const row = jobId ? jobById.get(jobId) : undefined;
    if (!row) return null;
    const job = toJob(row);
    const release = releaseOfDeployParams(job.params) ?? { id: '', version: '', sequence: 0, forced: false };
    return {
      id: job.id,
      status: job.status,
      errorMessage: job.errorMessage,
      release: { id: release.id, version: release.version, sequence: release.sequence },
      forced: release.forced,
      workflowName: job.workflowName,
    };
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
    const binding = withReport(toDeviceBinding(row), req.report);
    let releases = releaseCache.get(app.id);
    if (!releases) {
      releases = releasesOf.all(app.id).map(toRelease);
      releaseCache.set(app.id, releases);
    }
    const plan = planEvaluation({
      binding: {
        channel: binding.channel,
        current: binding.current,
        activeJobId: binding.activeJobId,
        failedAttempts: binding.failedAttempts,
        retryAt: binding.retryAt === null ? null : Date.parse(binding.retryAt),
        postponedReleaseId: binding.postponedReleaseId,
      },
      releases,
      activeJob: activeJobFacts(binding.activeJobId),
      updateWorkflowName: app.update_workflow_name,
      agentRevoked: agentStatus.get(binding.agentId)?.status === 'revoked',
      reason: req.reason,
      reportedState: req.report?.state,
      now,
    });
    let supersededJobId: string | null = null;
    if (plan.supersede) {
      const cancelled = cancelPending.run({
        id: plan.supersede.jobId,
        message: plan.supersede.message,
        at: isoAt(now),
      });
      if (cancelled.changes === 1) supersededJobId = plan.supersede.jobId;
    }
    const createdJobId = plan.issue ? issueJob(app, binding, plan.issue, plan.state, now) : null;
    const next: DeviceBinding = {
      ...binding,
      current: plan.binding.current,
      failedAttempts: plan.binding.failedAttempts,
      retryAt: plan.binding.retryAt === null ? null : isoAt(plan.binding.retryAt),
      postponedReleaseId: plan.binding.postponedReleaseId,
      activeJobId: createdJobId ?? plan.binding.activeJobId,
      desiredReleaseId: plan.state.desired?.id ?? null,
      forced: plan.state.forced,
    };
    update.run(updateBindingParams(next));
    return {
      ...gone,
      binding: next,
      state: plan.state,
      settled: plan.settled,
      createdJobId,
      supersededJobId,
      repushJobId: plan.repush,
      hold: plan.hold,
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
    async bindingOfActiveJob(jobId) {
      return ofActiveJob.get(jobId)?.id ?? null;
    },
    async applicationOfUpdateJob(jobId) {
      return appOfJob.get(jobId)?.application_id ?? null;
    },
    async evaluate(requests, now) {
      return evaluate.immediate(requests, now);
    },
  };
}

/** The binding with a report's observations applied. */
function withReport(binding: DeviceBinding, report: ReportWrite | undefined): DeviceBinding {
  if (!report) return binding;
  const next = { ...binding, lastReportAt: report.at };
  if (report.current !== undefined) next.current = report.current;
  if (report.state !== undefined) {
    next.state = report.state;
    next.error = report.error ?? null;
  } else if (report.error !== undefined) next.error = report.error;
  return next;
}

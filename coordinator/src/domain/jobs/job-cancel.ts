import { DEFAULT_CANCEL_GRACE_MS } from '@drover/shared';
import { requirePermission } from '../orgs/permissions.js';
import { AppError, notFound } from '../../errors.js';
import { isoNow, type Clock } from '../../util/clock.js';
import { userAction, type AuditLog } from '../audit/audit-log.js';
import type { JobEvents } from './job-events.js';
import type { Job, TransitionResult } from '../model/jobs.js';
import type { Repositories } from '../model/repositories.js';

export interface JobCancelDeps {
  repos: Repositories;
  audit: AuditLog;
  jobEvents: JobEvents;
  clock: Clock;
  /** DROVER_JOB_DEADLINE_GRACE_MS: added to the workflow's cancel grace to make a running job's confirm-by instant. */
  deadlineGraceMs: number;
}

/**
 * What a cancel did: `cancelled`: the job had not started and is `cancelled` now; `requested`:
 * the job is running, its agent was asked to stop it and reports how it ended.
 */
export interface CancelOutcome {
  outcome: 'cancelled' | 'requested';
  job: Job;
}

/**
 * Cancelling a job (docs/jobs.md, "Cancellation"): the one way in for every caller (the
 * dashboard's `POST /v1/jobs/:id/cancel` today, chat commands later). A member of the job's
 * organization whose role may cancel jobs (not a viewer: 403) may cancel it; a job of another organization is not found. The rule itself
 * (`planCancel` in job-state.ts) is decided inside the write, so a cancel racing the agent's own
 * finish has one winner: a cancel that lost is 409, a result that lost is taken as a repeat.
 * After the commit the agent's stream gets a `cancel` event, a job that ended wakes the sync
 * callers waiting on it, and the first successful request is audited (`job.cancel`).
 */
export class JobCancelService {
  constructor(private readonly deps: JobCancelDeps) {}

  async cancel(actor: { userId: string }, jobId: string): Promise<CancelOutcome> {
    const { repos, audit } = this.deps;
    const found = await repos.jobs.findById(jobId);
    const role = found ? await repos.orgs.roleOf(found.orgId, actor.userId) : null;
    if (!found || !role) throw notFound('Job');
    requirePermission(role, 'jobs.cancel');
    const result = await this.cancelJob(found);
    if (result.outcome === 'not_found') throw notFound('Job');
    const { job } = result;
    if (result.outcome === 'conflict') {
      throw new AppError(
        'conflict',
        `The job already ended (${job.status}); only a pending, queued or running job can be cancelled`,
        { details: { jobId: job.id, status: job.status } },
      );
    }
    const outcome = job.status === 'cancelled' ? 'cancelled' : 'requested';
    if (result.outcome === 'unchanged') return { outcome, job };
    await audit.record(
      userAction({ orgId: job.orgId, userId: actor.userId }, 'job.cancel', 'job', job.id, {
        jobNumber: job.number,
        kind: job.kind,
        workflowName: job.workflowName,
        outcome,
      }),
    );
    return { outcome, job };
  }

  /**
   * The cancel of one job, without the caller's checks or an audit entry (a batch's cancel audits
   * once, domain/fleet/batch-service.ts): written, then told to its agent and to the waits on it.
   */
  async cancelJob(found: Job): Promise<TransitionResult> {
    const { repos, jobEvents } = this.deps;
    let result = await this.write(found);
    if (result.outcome === 'not_found') {
      // The job's agent is part of what the write locks: a pool gave the job waiting in it to an
      // agent since it was read. Cancelled as it is now (it was answered 404, and then ran).
      const now = await repos.jobs.findById(found.id);
      if (now && now.agentId !== found.agentId) result = await this.write(now);
    }
    if (result.outcome === 'not_found' || result.outcome === 'conflict') return result;
    const { job } = result;
    // The agent hears of it first, so that a queue slot it frees is free before the next job arrives.
    if (job.agentId !== null) jobEvents.cancelRequested(job.agentId, job.id);
    if (result.outcome === 'applied' && job.status === 'cancelled') jobEvents.jobFinished(job.id);
    return result;
  }

  private async write(job: Job): Promise<TransitionResult> {
    const at = isoNow(this.deps.clock);
    const confirmBy = new Date(Date.parse(at) + (await this.cancelGraceMs(job)) + this.deps.deadlineGraceMs);
    return this.deps.repos.jobs.cancel(job.agentId, job.id, { at, confirmBy: confirmBy.toISOString() });
  }

  /** The grace the job's workflow gives its steps between SIGTERM and SIGKILL, as its agent reported it. */
  private async cancelGraceMs(job: Job): Promise<number> {
    if (job.agentId === null) return DEFAULT_CANCEL_GRACE_MS;
    const workflow = await this.deps.repos.workflows.findActiveByAgentAndName(job.agentId, job.workflowName);
    return workflow?.cancelGraceMs ?? DEFAULT_CANCEL_GRACE_MS;
  }
}

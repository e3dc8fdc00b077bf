import { performance } from 'node:perf_hooks';
import type { AuditAction } from '../model/audit.js';
import type { LimitRefusal } from '../model/rate-limits.js';
import type { Repositories } from '../model/repositories.js';
import type { Trigger } from '../model/triggers.js';
import type { Workflow } from '../model/workflows.js';
import type { AdmissionOutcome, JobResult, PoolCandidate, TriggerRunRepository } from '../model/trigger-runs.js';
import { isTerminalJobStatus } from '@drover/shared';
import { AppError } from '../../errors.js';
import type { Clock } from '../../util/clock.js';
import { newTimeOrderedId } from '../../util/ids.js';
import type { AuditLog } from '../audit/audit-log.js';
import type { JobEvents } from '../jobs/job-events.js';
import { noMetrics, type Metrics } from '../metrics.js';
import { checkRunFileRefs, type FileRefLookups } from './file-refs.js';
import { IDEMPOTENCY_TTL_MS, idempotencyConflict, requestHash } from './idempotency.js';
import { resolveRunParams } from './params.js';
import { resolveRunRequest, workflowNotFound, type RunRequest, type TriggerRunBody } from './request.js';
import { RunTargets, type RunTarget } from './run-targets.js';
import { scheduleActor, type RunActor } from './run-actors.js';
import { runBatch, type BatchRunDeps } from '../fleet/batch-runs.js';
import { preparePoolRun } from '../fleet/pool-runs.js';

export { apiTokenActor, chatActor, scheduleActor, userActor, type RunActor } from './run-actors.js';

/**
 * The one way in for a run of a trigger (docs/trigger-runs.md): every source of runs (the public
 * webhook route today; schedules, runs by hand and chat commands next) calls `run`, so that every
 * rule of the specification exists once: the trigger's own rules (refs, debug, force), the
 * workflow and its params, the files a run is given, idempotency, the caller's and the workflow's
 * limits, the job, its audit entries and its event to the agent's stream. Validation problems name
 * the request's fields (`ref`, `params.env`); the HTTP layer places them (`body.ref`).
 */

export interface RunTriggerInput {
  target: RunTarget;
  actor: RunActor;
  request: TriggerRunBody;
  /** The caller's idempotency key, or null. */
  idempotencyKey: string | null;
}

export type RunOutcome =
  /**
   * A job: new (`repeated: false`) or, for a repeated idempotency key, the first call's; `agentId`:
   * the agent a new pool's job went to (null: it waits in the pool).
   */
  | { outcome: 'accepted'; jobId: string; repeated: boolean; trigger: Trigger; agentId?: string | null }
  /** The batch of a `fanout: all` trigger (docs/fleets.md): new, or a repeated key's. */
  | { outcome: 'batch'; batchId: string; jobIds: string[]; repeated: boolean; trigger: Trigger }
  /** Refused by a limit: a `rejected` job was stored (none for a batch) and the refusal audited. */
  | {
      outcome: 'rate_limited';
      jobId: string | null;
      scope: 'token' | 'workflow';
      refusal: LimitRefusal;
      workflowName: string;
    };

/** What became of an occurrence of a cron trigger's schedule handed to `runOccurrence`. */
export type OccurrenceRunOutcome =
  /** Its job: `pending`, or `rejected` (a limit, or a rule such as params that no longer validate). */
  | {
      outcome: 'job_created';
      jobId: string;
      status: 'pending' | 'rejected';
      /** Why a rule rejected it (its job's error message); absent when pending or refused by a limit. */
      rejection?: string;
    }
  /** Its batch (a trigger on a label selector with fanout all, docs/fleets.md). */
  | { outcome: 'batch_created'; batchId: string }
  /** Recorded as skipped: the previous scheduled job is still open (overlap policy `skip`). */
  | { outcome: 'skipped_overlap' }
  /** Claimed before, by this or another scheduler: nothing was done. */
  | { outcome: 'claimed_before' }
  /** The trigger is gone, or no longer has this schedule (`stillDue` said no): nothing was done. */
  | { outcome: 'not_due' };

export interface RunOccurrenceInput {
  orgId: string;
  triggerId: string;
  /** The occurrence, ISO 8601 UTC. */
  scheduledAt: string;
  /** Whether the trigger as it is now still has the schedule that made this occurrence due. */
  stillDue(trigger: Trigger): boolean;
}

interface PreparedRun {
  run: RunRequest;
  workflow: Workflow;
  params: Record<string, unknown>;
}

export interface TriggerRunServiceDeps {
  repos: Pick<Repositories, 'triggerRuns' | 'changeCounter' | 'triggers' | 'agents' | 'workflows' | 'batches'>;
  clock: Clock;
  audit: AuditLog;
  jobEvents: JobEvents;
  files: FileRefLookups;
  /** The admissions' figures (docs/metrics.md); none by default. */
  metrics?: Metrics;
}

export class TriggerRunService {
  private readonly targets: RunTargets;
  private readonly runs: TriggerRunRepository;
  private readonly metrics: Metrics;

  constructor(private readonly deps: TriggerRunServiceDeps) {
    this.targets = new RunTargets(deps.repos);
    this.runs = deps.repos.triggerRuns;
    this.metrics = deps.metrics ?? noMetrics;
  }

  /** The trigger of the organization as a run sees it (cached exactly), or null. */
  target(orgId: string, triggerId: string, generation?: number): Promise<RunTarget | null> {
    return this.targets.trigger(orgId, triggerId, generation);
  }

  /**
   * Admits a run: throws 403/404/409/422 (AppError) for a request the rules refuse, answers
   * `rate_limited` for one a limit refuses, `accepted` with the job otherwise.
   */
  async run({ target, actor, request, idempotencyKey }: RunTriggerInput): Promise<RunOutcome> {
    const { trigger } = target;
    if (trigger.agentSelector !== null && trigger.fanout === 'all') {
      const run = resolveRunRequest(target, request, actor);
      const outcome = await runBatch(this.batchDeps(), { trigger, actor, run, request, idempotencyKey });
      if (outcome.outcome === 'batch') return outcome;
      if (outcome.outcome === 'rate_limited') return { ...outcome, jobId: null };
      throw new Error(`a batch without an occurrence was answered ${outcome.outcome}`);
    }
    const { audit, clock, jobEvents } = this.deps;
    // A pool's job (fanout one) gets its agent in the admission, or waits for one.
    const { run, workflow, params, pool } =
      trigger.agentSelector !== null
        ? await preparePoolRun(this.deps.repos, this.deps.files, target, actor, request)
        : { ...(await this.prepare(target, actor, request)), pool: undefined };

    const now = clock.now();
    const jobId = newTimeOrderedId(now);
    const admission = await this.runs.admit({
      job: {
        id: jobId,
        orgId: trigger.orgId,
        kind: 'trigger',
        source: actor.source,
        triggerId: trigger.id,
        agentId: trigger.agentId,
        workflowId: workflow.id,
        workflowName: workflow.name,
        ref: run.ref,
        debug: run.debug,
        params,
        forced: run.forced,
        forceReason: run.forceReason,
        apiTokenId: actor.apiTokenId,
        userId: actor.userId,
        timeoutMs: workflow.timeoutMs,
        createdAt: new Date(now).toISOString(),
        chatOrigin: actor.chat,
      },
      now,
      idempotency:
        idempotencyKey === null
          ? null
          : {
              key: idempotencyKey,
              requestHash: requestHash(request),
              ttlMs: IDEMPOTENCY_TTL_MS,
              // A chat run's key is its message's: refused once, it stays refused (docs/chat.md).
              keepRefused: actor.chat !== null,
            },
      token: actor.limits,
      workflowLimits: workflow.rateLimit,
      pool,
    });

    switch (admission.outcome) {
      case 'idempotency_conflict':
        throw idempotencyConflict(admission.usedFor);
      case 'refused': {
        const { refusal, scope } = admission;
        this.countRefusal(actor, admission);
        await this.auditRefusal(trigger, actor, workflow, admission);
        return { outcome: 'rate_limited', jobId: admission.jobId, scope, refusal, workflowName: workflow.name };
      }
      case 'admitted': {
        if (admission.agentId !== null) jobEvents.jobCreated(admission.agentId, jobId);
        else jobEvents.jobPooled(trigger.orgId, jobId);
        this.metrics.jobCreated(actor.source, 'pending');
        const onTrigger = (action: AuditAction, metadata: Record<string, unknown>) =>
          audit.record({
            orgId: trigger.orgId,
            ...actor.auditActor,
            action,
            targetType: 'trigger',
            targetId: trigger.id,
            metadata,
          });
        if (actor.auditsRuns) {
          await onTrigger('trigger.run', {
            jobId,
            source: actor.source,
            workflowName: workflow.name,
            forced: run.forced,
            ...(actor.chat ? { chatUser: { id: actor.chat.userId, name: actor.chat.userName } } : {}),
          });
        }
        if (run.forced) {
          await onTrigger('trigger.force_run', { forceReason: run.forceReason, jobId, workflowName: workflow.name });
        }
        return { outcome: 'accepted', jobId, repeated: false, trigger, agentId: admission.agentId };
      }
      case 'repeated':
        this.metrics.idempotentReplay();
        return { outcome: 'accepted', jobId: admission.jobId, repeated: true, trigger };
      case 'rejected':
      case 'claimed_before':
      case 'skipped_overlap':
        throw new Error(`a run without an occurrence or a rejection was answered ${admission.outcome}`);
    }
  }

  /**
   * Fires one occurrence of a cron trigger's schedule through the same rules as every run, with
   * the trigger's fixed params and ref, as `scheduleActor`. The occurrence is claimed in the
   * transaction that stores its job, so it makes at most one job whoever else tries. A run the
   * rules refuse (params that no longer validate, a ref no longer allowed, a workflow the agent no
   * longer reports, a revoked agent) is stored as a `rejected` job with the refusal as message.
   */
  async runOccurrence({ orgId, triggerId, scheduledAt, stillDue }: RunOccurrenceInput): Promise<OccurrenceRunOutcome> {
    const { clock, jobEvents } = this.deps;
    const target = await this.target(orgId, triggerId);
    if (!target || !stillDue(target.trigger)) return { outcome: 'not_due' };
    const { trigger } = target;
    const actor = scheduleActor(trigger);
    const request: TriggerRunBody = {
      ...(trigger.ref === null ? {} : { ref: trigger.ref }),
      ...(trigger.params === null ? {} : { params: trigger.params }),
    };
    const occurrence = { scheduledAt, overlap: trigger.cronOverlapPolicy ?? 'skip' };
    // A batch at each occurrence (docs/fleets.md); one the rules refuse as a whole (no agent
    // matches, params no version takes) is recorded as a rejected job, as a single run's is.
    let rejection: string | undefined;
    if (trigger.agentSelector !== null && trigger.fanout === 'all') {
      try {
        const run = resolveRunRequest(target, request, actor);
        const batch = await runBatch(this.batchDeps(), {
          trigger,
          actor,
          run,
          request,
          idempotencyKey: null,
          occurrence,
        });
        if (batch.outcome === 'claimed_before' || batch.outcome === 'skipped_overlap')
          return { outcome: batch.outcome };
        if (batch.outcome !== 'batch') throw new Error(`a scheduled batch has no token, yet it was ${batch.outcome}`);
        return { outcome: 'batch_created', batchId: batch.batchId };
      } catch (error) {
        if (!(error instanceof AppError)) throw error;
        rejection = error.message;
      }
    }
    let prepared: PreparedRun | null = null;
    let pool: { candidates: PoolCandidate[] } | undefined;
    let workflow: Workflow | null = null;
    try {
      if (rejection !== undefined) throw new AppError('conflict', rejection);
      if (trigger.agentSelector !== null) {
        const pooled = await preparePoolRun(this.deps.repos, this.deps.files, target, actor, request);
        pool = pooled.pool;
        prepared = pooled;
      } else {
        prepared = await this.prepare(target, actor, request);
      }
      workflow = prepared.workflow;
    } catch (error) {
      if (!(error instanceof AppError)) throw error;
      // The message names every problem (a 422's message lists each `path: problem`).
      rejection = error.message;
      workflow = trigger.workflowName === null ? null : await target.workflow(trigger.workflowName);
    }
    const now = clock.now();
    const jobId = newTimeOrderedId(now);
    const admission = await this.runs.admit({
      job: {
        id: jobId,
        orgId: trigger.orgId,
        kind: 'trigger',
        source: actor.source,
        triggerId: trigger.id,
        agentId: trigger.agentId,
        workflowId: workflow?.id ?? null,
        workflowName: workflow?.name ?? trigger.workflowName ?? '',
        ref: prepared?.run.ref ?? trigger.ref,
        debug: false,
        params: prepared?.params ?? trigger.params ?? {},
        forced: false,
        forceReason: null,
        apiTokenId: null,
        userId: null,
        timeoutMs: workflow?.timeoutMs ?? null,
        createdAt: new Date(now).toISOString(),
      },
      now,
      idempotency: null,
      token: null,
      workflowLimits: workflow?.rateLimit ?? { perMinute: null, perHour: null, perDay: null },
      occurrence,
      rejection,
      pool,
    });
    switch (admission.outcome) {
      case 'admitted':
        if (admission.agentId !== null) jobEvents.jobCreated(admission.agentId, jobId);
        else jobEvents.jobPooled(trigger.orgId, jobId);
        this.metrics.jobCreated(actor.source, 'pending');
        return { outcome: 'job_created', jobId, status: 'pending' };
      case 'refused':
        this.countRefusal(actor, admission);
        await this.auditRefusal(trigger, actor, workflow as Workflow, admission);
        return { outcome: 'job_created', jobId, status: 'rejected' };
      case 'rejected':
        this.countRejected(actor);
        return { outcome: 'job_created', jobId, status: 'rejected', ...(rejection === undefined ? {} : { rejection }) };
      case 'skipped_overlap':
      case 'claimed_before':
        return { outcome: admission.outcome };
      case 'repeated':
      case 'idempotency_conflict':
        throw new Error(`a scheduled run has no idempotency key, yet its admission answered ${admission.outcome}`);
    }
  }

  private batchDeps(): BatchRunDeps {
    const { repos, clock, audit, jobEvents, files } = this.deps;
    return { repos, clock, audit, jobEvents, files, metrics: this.metrics };
  }

  /** The rules before the admission: the trigger's and the actor's, the workflow, its params and files. */
  private async prepare(target: RunTarget, actor: RunActor, request: TriggerRunBody): Promise<PreparedRun> {
    const run = resolveRunRequest(target, request, actor);
    const workflow = await target.workflow(run.workflowName);
    if (!workflow) throw workflowNotFound(run.workflowName);
    const params = await checkRunFileRefs(
      workflow.paramsSchema,
      resolveRunParams(workflow.paramsSchema, request.params),
      actor.files,
      this.deps.files,
      actor.auditActor.actorType === 'api_token' ? 'api_token' : 'member',
    );
    return { run, workflow, params };
  }

  /** A run a limit refused: the block, and its job, created and ended `rejected` at once. */
  private countRefusal(actor: RunActor, admission: Extract<AdmissionOutcome, { outcome: 'refused' }>): void {
    this.metrics.rateLimitBlocked(admission.scope);
    this.countRejected(actor);
  }

  private countRejected(actor: RunActor): void {
    this.metrics.jobCreated(actor.source, 'rejected');
    this.metrics.jobFinished('rejected', null);
  }

  private async auditRefusal(
    trigger: Trigger,
    actor: RunActor,
    workflow: Workflow,
    admission: Extract<AdmissionOutcome, { outcome: 'refused' }>,
  ): Promise<void> {
    const { refusal, scope } = admission;
    await this.deps.audit.record({
      orgId: trigger.orgId,
      ...actor.auditActor,
      action: 'rate_limit.block',
      targetType: scope === 'workflow' ? 'workflow' : 'api_token',
      targetId: scope === 'workflow' ? workflow.id : (actor.limits?.id ?? null),
      metadata: {
        scope,
        window: refusal.window,
        limit: refusal.limit,
        observed: refusal.observed,
        ...(scope === 'workflow' ? { workflowId: workflow.id } : {}),
        jobId: admission.jobId,
      },
    });
  }

  /**
   * The job's result once it has ended, or as it stands after `timeoutMs` (or when `signal`
   * aborts); null for a job that does not exist. Subscribes to the job's end before reading it,
   * so an end between the two is not missed; the end may be committed by another coordinator on
   * the database (JobEvents), and after a gap in their events the job is read again.
   */
  async waitForResult(jobId: string, timeoutMs: number, signal?: AbortSignal): Promise<JobResult | null> {
    // Timers run on real time, whatever the clock of the domain says.
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      const wait = this.deps.jobEvents.waitForFinish(jobId, Math.max(0, deadline - performance.now()), signal);
      try {
        const job = await this.runs.jobResult(jobId);
        if (!job || isTerminalJobStatus(job.status)) return job;
        if (!(await wait.done)) return await this.runs.jobResult(jobId);
      } finally {
        wait.cancel();
      }
    }
  }
}

import { performance } from 'node:perf_hooks';
import type { AuthenticatingApiToken } from '../model/api-tokens.js';
import type { AuditAction } from '../model/audit.js';
import type { ChatOrigin, JobSource } from '../model/jobs.js';
import type { Role } from '../model/orgs.js';
import type { LimitRefusal, RateLimits } from '../model/rate-limits.js';
import type { Repositories } from '../model/repositories.js';
import type { Trigger, TriggerType } from '../model/triggers.js';
import type { Workflow } from '../model/workflows.js';
import type { AdmissionOutcome, JobResult, TriggerRunRepository } from '../model/trigger-runs.js';
import { isTerminalJobStatus } from '@drover/shared';
import { AppError, conflict } from '../../errors.js';
import type { Clock } from '../../util/clock.js';
import { newTimeOrderedId } from '../../util/ids.js';
import type { AuditLog, UserActor } from '../audit/audit-log.js';
import { TOKEN_RUNNABLE_TRIGGER_TYPES } from '../tokens/grants.js';
import { memberFileCaller, systemReaderFileCaller, tokenFileCaller, type FileCaller } from '../files/access.js';
import type { JobEvents } from '../jobs/job-events.js';
import { noMetrics, type Metrics } from '../metrics.js';
import { checkRunFileRefs, type FileRefLookups } from './file-refs.js';
import { IDEMPOTENCY_TTL_MS, requestHash } from './idempotency.js';
import { resolveRunParams } from './params.js';
import { resolveRunRequest, workflowNotFound, type RunRequest, type TriggerRunBody } from './request.js';
import { RunTargets, type RunTarget } from './run-targets.js';

/**
 * The one way in for a run of a trigger (docs/trigger-runs.md): every source of runs (the public
 * webhook route today; schedules, runs by hand and chat commands next) calls `run`, so that every
 * rule of the specification exists once: the trigger's own rules (refs, debug, force), the
 * workflow and its params, the files a run is given, idempotency, the caller's and the workflow's
 * limits, the job, its audit entries and its event to the agent's stream. Validation problems name
 * the request's fields (`ref`, `params.env`); the HTTP layer places them (`body.ref`).
 */

/** Who asks for a run, as far as the rules care. */
export interface RunActor {
  /** The source of runs the actor stands for, recorded on the job. */
  source: Exclude<JobSource, 'ota'>;
  /** How the audit log names the actor. */
  auditActor: { actorType: 'api_token' | 'user' | 'system'; actorId: string | null };
  /** Why the actor may not force a run past the workflow's limits, or null when it may. */
  forceDenied: string | null;
  /** The types of trigger the actor may run; null: every type (a member, by hand). */
  runsTypes: readonly TriggerType[] | null;
  /** Recorded on the job. */
  apiTokenId: string | null;
  userId: string | null;
  /** The actor's own job limits (an API token's), applied with the workflow's; null: none. */
  limits: { id: string; limits: RateLimits } | null;
  /** Whose storage rights decide which files the run may be given. */
  files: FileCaller;
  /** Whether each accepted run gets its own `trigger.run` audit entry (runs by people do). */
  auditsRuns: boolean;
  /** A chat run's origin, recorded on the job; null for the other sources. */
  chat: ChatOrigin | null;
}

/** An API token calling `POST /v1/triggers/:id/run`. */
export function apiTokenActor(token: AuthenticatingApiToken): RunActor {
  return {
    source: 'webhook',
    runsTypes: TOKEN_RUNNABLE_TRIGGER_TYPES,
    auditActor: { actorType: 'api_token', actorId: token.id },
    forceDenied:
      token.issuerRole === 'owner'
        ? null
        : "A forced run needs the owner role; the API token's issuer is not an owner of the organization",
    apiTokenId: token.id,
    userId: token.userId,
    limits: { id: token.id, limits: token.rateLimit },
    files: tokenFileCaller(token),
    auditsRuns: false,
    chat: null,
  };
}

/**
 * A member of the trigger's organization running it by hand (`POST
 * /v1/orgs/:orgId/triggers/:id/run`): no token, so no token limits; the workflow's apply. Any
 * member may run, an owner may force; the run may be given any active file of the organization.
 */
export function userActor(user: UserActor & { role: Role }): RunActor {
  return {
    source: 'manual',
    runsTypes: null,
    auditActor: { actorType: 'user', actorId: user.userId },
    forceDenied:
      user.role === 'owner' ? null : 'A forced run needs the owner role; you are a member of the organization',
    apiTokenId: null,
    userId: user.userId,
    limits: null,
    files: memberFileCaller(user.orgId, user.userId),
    auditsRuns: true,
    chat: null,
  };
}

/**
 * A cron trigger's schedule firing an occurrence (docs/schedules.md): the system acts, with no
 * token, so no token limits; the workflow's apply and are never forced. The run is given the
 * files its fixed params name, any active file of the trigger's organization, and no others.
 */
export function scheduleActor(trigger: Pick<Trigger, 'id' | 'orgId'>): RunActor {
  return {
    source: 'cron',
    runsTypes: ['cron'],
    auditActor: { actorType: 'system', actorId: null },
    forceDenied: 'A scheduled run is never forced',
    apiTokenId: null,
    userId: null,
    limits: null,
    files: systemReaderFileCaller(trigger.orgId),
    auditsRuns: false,
    chat: null,
  };
}

/**
 * Someone in a connected chat channel running its trigger by keyword (docs/chat.md, "Chat
 * triggers"): anyone who can post there; no token, so no token limits (the workflow's apply);
 * never forced; audited with the chat user in the entry; may name any active file of the
 * organization by id.
 */
export function chatActor(trigger: Pick<Trigger, 'orgId'>, origin: ChatOrigin): RunActor {
  return {
    source: origin.provider,
    runsTypes: [origin.provider],
    auditActor: { actorType: 'system', actorId: null },
    forceDenied: 'A chat run is never forced',
    apiTokenId: null,
    userId: null,
    limits: null,
    files: systemReaderFileCaller(trigger.orgId),
    auditsRuns: true,
    chat: origin,
  };
}

export interface RunTriggerInput {
  target: RunTarget;
  actor: RunActor;
  request: TriggerRunBody;
  /** The caller's idempotency key, or null. */
  idempotencyKey: string | null;
}

export type RunOutcome =
  /** A job: new (`repeated: false`) or, for a repeated idempotency key, the first call's. */
  | { outcome: 'accepted'; jobId: string; repeated: boolean; trigger: Trigger }
  /** Refused by a limit: a `rejected` job was stored and the refusal audited. */
  | {
      outcome: 'rate_limited';
      jobId: string;
      scope: 'token' | 'workflow';
      refusal: LimitRefusal;
      workflowName: string;
    };

/** What became of an occurrence of a cron trigger's schedule handed to `runOccurrence`. */
export type OccurrenceRunOutcome =
  /** Its job: `pending`, or `rejected` (a limit, or a rule such as params that no longer validate). */
  | { outcome: 'job_created'; jobId: string; status: 'pending' | 'rejected' }
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
  repos: Pick<Repositories, 'triggerRuns' | 'changeCounter' | 'triggers' | 'agents' | 'workflows'>;
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
    const { audit, clock, jobEvents } = this.deps;
    const { run, workflow, params } = await this.prepare(target, actor, request);

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
          : { key: idempotencyKey, requestHash: requestHash(request), ttlMs: IDEMPOTENCY_TTL_MS },
      token: actor.limits,
      workflowLimits: workflow.rateLimit,
    });

    switch (admission.outcome) {
      case 'idempotency_conflict':
        throw conflict(
          'This Idempotency-Key was already used with a different request body for this trigger and workflow',
          'idempotency_conflict',
        );
      case 'refused': {
        const { refusal, scope } = admission;
        this.countRefusal(actor, admission);
        await this.auditRefusal(trigger, actor, workflow, admission);
        return { outcome: 'rate_limited', jobId: admission.jobId, scope, refusal, workflowName: workflow.name };
      }
      case 'admitted': {
        jobEvents.jobCreated(trigger.agentId, jobId);
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
        return { outcome: 'accepted', jobId, repeated: false, trigger };
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
    let prepared: PreparedRun | null = null;
    let rejection: string | undefined;
    let workflow: Workflow | null = null;
    try {
      prepared = await this.prepare(target, actor, request);
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
      occurrence: { scheduledAt, overlap: trigger.cronOverlapPolicy ?? 'skip' },
      rejection,
    });
    switch (admission.outcome) {
      case 'admitted':
        jobEvents.jobCreated(trigger.agentId, jobId);
        this.metrics.jobCreated(actor.source, 'pending');
        return { outcome: 'job_created', jobId, status: 'pending' };
      case 'refused':
        this.countRefusal(actor, admission);
        await this.auditRefusal(trigger, actor, workflow as Workflow, admission);
        return { outcome: 'job_created', jobId, status: 'rejected' };
      case 'rejected':
        this.countRejected(actor);
        return { outcome: 'job_created', jobId, status: 'rejected' };
      case 'skipped_overlap':
      case 'claimed_before':
        return { outcome: admission.outcome };
      case 'repeated':
      case 'idempotency_conflict':
        throw new Error(`a scheduled run has no idempotency key, yet its admission answered ${admission.outcome}`);
    }
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

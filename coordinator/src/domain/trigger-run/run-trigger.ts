import type { AuthenticatingApiToken } from '../model/api-tokens.js';
import type { JobSource } from '../model/jobs.js';
import type { Role } from '../model/orgs.js';
import type { RateLimits } from '../model/rate-limits.js';
import type { Repositories } from '../model/repositories.js';
import type { Trigger } from '../model/triggers.js';
import type { JobResult, TriggerRunRepository } from '../model/trigger-runs.js';
import { isTerminalJobStatus } from '@drover/shared';
import { conflict } from '../../errors.js';
import type { Clock } from '../../util/clock.js';
import { newTimeOrderedId } from '../../util/ids.js';
import type { AuditLog, UserActor } from '../audit-log.js';
import type { FileCaller } from '../files/access.js';
import { STORAGE_PERMISSIONS } from '../grants.js';
import type { JobEvents } from '../job-events.js';
import { checkRunFileRefs, type FileRefLookups } from './file-refs.js';
import { IDEMPOTENCY_TTL_MS, requestHash } from './idempotency.js';
import { resolveRunParams } from './params.js';
import type { LimitRefusal } from './rate-windows.js';
import { resolveRunRequest, workflowNotFound, type TriggerRunBody } from './request.js';
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
  /** Recorded on the job. */
  apiTokenId: string | null;
  userId: string | null;
  /** The actor's own job limits (an API token's), applied with the workflow's; null: none. */
  limits: { id: string; limits: RateLimits } | null;
  /** Whose storage rights decide which files the run may be given. */
  files: FileCaller;
  /** Whether each accepted run gets its own `trigger.run` audit entry (runs by people do). */
  auditsRuns: boolean;
}

/** An API token calling `POST /v1/triggers/:id/run`. */
export function apiTokenActor(token: AuthenticatingApiToken): RunActor {
  return {
    source: 'webhook',
    auditActor: { actorType: 'api_token', actorId: token.id },
    forceDenied:
      token.issuerRole === 'owner'
        ? null
        : "A forced run needs the owner role; the API token's issuer is not an owner of the organization",
    apiTokenId: token.id,
    userId: token.userId,
    limits: { id: token.id, limits: token.rateLimit },
    files: token,
    auditsRuns: false,
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
    auditActor: { actorType: 'user', actorId: user.userId },
    forceDenied:
      user.role === 'owner' ? null : 'A forced run needs the owner role; you are a member of the organization',
    apiTokenId: null,
    userId: user.userId,
    limits: null,
    files: {
      id: user.userId,
      orgId: user.orgId,
      scopes: [{ type: 'storage', bindingIds: null, permissions: [...STORAGE_PERMISSIONS] }],
    },
    auditsRuns: true,
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

export interface TriggerRunServiceDeps {
  repos: Pick<Repositories, 'triggerRuns' | 'changeCounter' | 'triggers' | 'agents' | 'workflows'>;
  clock: Clock;
  audit: AuditLog;
  jobEvents: JobEvents;
  files: FileRefLookups;
}

export class TriggerRunService {
  private readonly targets: RunTargets;
  private readonly runs: TriggerRunRepository;

  constructor(private readonly deps: TriggerRunServiceDeps) {
    this.targets = new RunTargets(deps.repos);
    this.runs = deps.repos.triggerRuns;
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
        await audit.record({
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
        return { outcome: 'rate_limited', jobId: admission.jobId, scope, refusal, workflowName: workflow.name };
      }
      case 'admitted': {
        jobEvents.jobCreated(trigger.agentId, jobId);
        const onTrigger = (action: string, metadata: Record<string, unknown>) =>
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
          });
        }
        if (run.forced) {
          await onTrigger('trigger.force_run', { forceReason: run.forceReason, jobId, workflowName: workflow.name });
        }
        return { outcome: 'accepted', jobId, repeated: false, trigger };
      }
      case 'repeated':
        return { outcome: 'accepted', jobId: admission.jobId, repeated: true, trigger };
    }
  }

  /**
   * The job's result once it has ended, or as it stands after `timeoutMs` (or when `signal`
   * aborts); null for a job that does not exist. Subscribes to the job's end before reading it,
   * so an end between the two is not missed.
   */
  async waitForResult(jobId: string, timeoutMs: number, signal?: AbortSignal): Promise<JobResult | null> {
    const wait = this.deps.jobEvents.waitForFinish(jobId, timeoutMs, signal);
    try {
      const job = await this.runs.jobResult(jobId);
      if (!job || isTerminalJobStatus(job.status)) return job;
      await wait.done;
      return await this.runs.jobResult(jobId);
    } finally {
      wait.cancel();
    }
  }
}

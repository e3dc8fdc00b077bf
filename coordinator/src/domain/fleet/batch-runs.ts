import { parseSelector } from '@drover/shared';
import { AppError, conflict } from '../../errors.js';
import type { Clock } from '../../util/clock.js';
import { newTimeOrderedId } from '../../util/ids.js';
import { selectAgents } from '../agents/agent-labels.js';
import type { AuditLog } from '../audit/audit-log.js';
import type { JobEvents } from '../jobs/job-events.js';
import type { Metrics } from '../metrics.js';
import type { Agent } from '../model/agents.js';
import type { BatchJobRequest } from '../model/batches.js';
import type { LimitRefusal } from '../model/rate-limits.js';
import type { Repositories } from '../model/repositories.js';
import type { CronOverlapPolicy, Trigger } from '../model/triggers.js';
import type { Workflow } from '../model/workflows.js';
import { checkRunFileRefs, type FileRefLookups } from '../trigger-run/file-refs.js';
import { IDEMPOTENCY_TTL_MS, idempotencyConflict, requestHash } from '../trigger-run/idempotency.js';
import { resolveRunParams } from '../trigger-run/params.js';
import type { RunRequest, TriggerRunBody } from '../trigger-run/request.js';
import type { RunActor } from '../trigger-run/run-actors.js';

/**
 * A run of a `fanout: all` trigger (docs/fleets.md, "Batches"): one job per agent the selector
 * matches when it is called (never-connected agents included: their jobs wait), grouped in a
 * batch. An agent that does not report the workflow, or whose version of it refuses the params,
 * gets a `rejected` job saying so; params every version refuses are the caller's mistake (422).
 * The batch counts once against the caller's limits and once against each agent's workflow.
 */

export interface BatchRunDeps {
  repos: Pick<Repositories, 'agents' | 'workflows' | 'batches'>;
  clock: Clock;
  audit: AuditLog;
  jobEvents: JobEvents;
  files: FileRefLookups;
  metrics: Metrics;
}

export type BatchRunOutcome =
  | { outcome: 'batch'; batchId: string; jobIds: string[]; repeated: boolean; trigger: Trigger }
  /** A scheduled batch's occurrence: claimed before by another scheduler, or skipped (the previous still open). */
  | { outcome: 'claimed_before' | 'skipped_overlap' }
  | { outcome: 'rate_limited'; scope: 'token'; refusal: LimitRefusal; workflowName: string };

/** The agents a selector trigger runs on now: those its selector matches, not revoked, by name. */
export async function selectedAgents(agents: Repositories['agents'], trigger: Trigger): Promise<Agent[]> {
  const all = await agents.listByOrg(trigger.orgId);
  return selectAgents(
    all.filter((a) => a.status !== 'revoked'),
    parseSelector(trigger.agentSelector ?? ''),
  ).sort((a, b) => (a.name === b.name ? (a.id < b.id ? -1 : 1) : a.name < b.name ? -1 : 1));
}

/** A 409 when a selector matches no agent: nothing is created. */
export const noMatchingAgent = (trigger: Trigger): AppError =>
  conflict(
    `No agent of the organization matches the selector \`${trigger.agentSelector}\` of trigger \`${trigger.name}\``,
    'no_matching_agent',
  );

interface Version {
  params: Record<string, unknown> | null;
  /** Why this version of the workflow refuses the params. */
  refusal: AppError | null;
}

export async function runBatch(
  deps: BatchRunDeps,
  input: {
    trigger: Trigger;
    actor: RunActor;
    run: RunRequest;
    request: TriggerRunBody;
    idempotencyKey: string | null;
    /** A schedule's occurrence, claimed with the batch (docs/schedules.md). */
    occurrence?: { scheduledAt: string; overlap: CronOverlapPolicy };
  },
): Promise<BatchRunOutcome> {
  const { trigger, actor, run, request, idempotencyKey, occurrence } = input;
  const { repos, clock, metrics } = deps;
  const agents = await selectedAgents(repos.agents, trigger);
  if (agents.length === 0) throw noMatchingAgent(trigger);
  const byAgent = new Map<string, Workflow>();
  for (const w of await repos.workflows.listActiveByAgents(agents.map((a) => a.id))) {
    if (w.name === run.workflowName) byAgent.set(w.agentId, w);
  }

  // The params against each version of the workflow (most fleets have one): a file given is
  // checked once per version.
  const versions = new Map<string, Version>();
  for (const workflow of byAgent.values()) {
    const key = JSON.stringify(workflow.paramsSchema);
    if (versions.has(key)) continue;
    try {
      const params = await checkRunFileRefs(
        workflow.paramsSchema,
        resolveRunParams(workflow.paramsSchema, request.params),
        actor.files,
        deps.files,
        actor.auditActor.actorType === 'api_token' ? 'api_token' : 'member',
      );
      versions.set(key, { params, refusal: null });
    } catch (error) {
      if (!(error instanceof AppError) || error.code !== 'validation_failed') throw error;
      versions.set(key, { params: null, refusal: error });
    }
  }
  const refusals = [...versions.values()].filter((v) => v.refusal !== null);
  if (versions.size > 0 && refusals.length === versions.size) throw refusals[0]!.refusal;

  const now = clock.now();
  const createdAt = new Date(now).toISOString();
  const batchId = newTimeOrderedId(now);
  const jobs: BatchJobRequest[] = agents.map((agent) => {
    const workflow = byAgent.get(agent.id) ?? null;
    const version = workflow ? versions.get(JSON.stringify(workflow.paramsSchema))! : null;
    const rejection = !workflow
      ? `Agent ${agent.name} does not report the workflow \`${run.workflowName}\``
      : version!.refusal
        ? `The version of \`${run.workflowName}\` on agent ${agent.name} refuses the params: ${version!.refusal.message}`
        : null;
    return {
      job: {
        id: newTimeOrderedId(now),
        orgId: trigger.orgId,
        kind: 'trigger',
        source: actor.source,
        triggerId: trigger.id,
        agentId: agent.id,
        workflowId: workflow?.id ?? null,
        workflowName: run.workflowName,
        ref: run.ref,
        debug: run.debug,
        params: version?.params ?? request.params ?? {},
        forced: run.forced,
        forceReason: run.forceReason,
        apiTokenId: actor.apiTokenId,
        userId: actor.userId,
        timeoutMs: workflow?.timeoutMs ?? null,
        createdAt,
        chatOrigin: actor.chat,
      },
      rejection,
      workflowLimits: workflow?.rateLimit ?? { perMinute: null, perHour: null, perDay: null },
    };
  });

  const admission = await repos.batches.admit({
    batch: {
      id: batchId,
      orgId: trigger.orgId,
      triggerId: trigger.id,
      workflowName: run.workflowName,
      selector: trigger.agentSelector ?? '',
      maxParallel: trigger.maxParallel,
      source: actor.source,
      apiTokenId: actor.apiTokenId,
      userId: actor.userId,
      createdAt,
    },
    jobs,
    now,
    idempotency:
      idempotencyKey === null
        ? null
        : { key: idempotencyKey, requestHash: requestHash(request), ttlMs: IDEMPOTENCY_TTL_MS },
    token: actor.limits,
    occurrence,
  });
  switch (admission.outcome) {
    case 'claimed_before':
    case 'skipped_overlap':
      return { outcome: admission.outcome };
    case 'idempotency_conflict':
      throw idempotencyConflict(admission.usedFor);
    case 'repeated': {
      metrics.idempotentReplay();
      const jobIds = (await repos.batches.jobs(admission.batchId)).map((j) => j.id);
      return { outcome: 'batch', batchId: admission.batchId, jobIds, repeated: true, trigger };
    }
    case 'refused':
      metrics.rateLimitBlocked('token');
      await deps.audit.record({
        orgId: trigger.orgId,
        ...actor.auditActor,
        action: 'rate_limit.block',
        targetType: 'api_token',
        targetId: actor.limits?.id ?? null,
        metadata: {
          scope: 'token',
          window: admission.refusal.window,
          limit: admission.refusal.limit,
          observed: admission.refusal.observed,
          batch: true,
        },
      });
      return { outcome: 'rate_limited', scope: 'token', refusal: admission.refusal, workflowName: run.workflowName };
    case 'admitted':
      break;
  }
  let open = 0;
  for (const job of admission.jobs) {
    metrics.jobCreated(actor.source, job.status === 'rejected' ? 'rejected' : 'pending');
    if (job.status === 'rejected') metrics.jobFinished('rejected', null);
    else open += 1;
    if (job.status === 'pending' && !job.held && job.agentId !== null) deps.jobEvents.jobCreated(job.agentId, job.id);
  }
  if (open === 0) await repos.batches.settle(batchId, createdAt);
  const onTrigger = (action: 'trigger.run' | 'trigger.force_run', metadata: Record<string, unknown>) =>
    deps.audit.record({
      orgId: trigger.orgId,
      ...actor.auditActor,
      action,
      targetType: 'trigger',
      targetId: trigger.id,
      metadata: { batchId, jobCount: admission.jobs.length, workflowName: run.workflowName, ...metadata },
    });
  if (actor.auditsRuns) {
    await onTrigger('trigger.run', {
      source: actor.source,
      forced: run.forced,
      ...(actor.chat ? { chatUser: { id: actor.chat.userId, name: actor.chat.userName } } : {}),
    });
  }
  if (run.forced) await onTrigger('trigger.force_run', { forceReason: run.forceReason });
  return { outcome: 'batch', batchId, jobIds: admission.jobs.map((j) => j.id), repeated: false, trigger };
}

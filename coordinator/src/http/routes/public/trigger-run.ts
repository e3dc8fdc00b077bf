import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { isTerminalJobStatus, JOB_STATUSES } from '@drover/shared';
import type { AuthenticatingApiToken } from '../../../db/repositories/api-tokens.js';
import type { JobResult } from '../../../db/repositories/trigger-runs.js';
import {
  IDEMPOTENCY_HEADER,
  IDEMPOTENCY_TTL_MS,
  idempotencyKeyOf,
  requestHash,
} from '../../../domain/trigger-run/idempotency.js';
import { checkRunFileRefs } from '../../../domain/trigger-run/file-refs.js';
import { resolveRunParams } from '../../../domain/trigger-run/params.js';
import { tokenLimitBody, workflowLimitBody } from '../../../domain/trigger-run/rate-windows.js';
import {
  checkTriggerGranted,
  MAX_FORCE_REASON_LENGTH,
  MAX_REF_LENGTH,
  requireTriggerGrant,
  resolveRunRequest,
  statusUrl,
  workflowNotFound,
  type TriggerRunBody,
} from '../../../domain/trigger-run/request.js';
import { RunTargets, type RunTarget } from '../../../domain/trigger-run/run-targets.js';
import { conflict, notFound } from '../../../errors.js';
import { newTimeOrderedId } from '../../../util/ids.js';
import { requireApiToken } from '../../auth/api-token.js';
import { errorResponses, idParams } from '../../schemas/common.js';
import { noQuery } from '../../schemas/management.js';

/**
 * `POST /v1/triggers/:id/run` (spec: Run a trigger; CONTRACT §4; rules and status codes in
 * docs/trigger-runs.md). The caller, the trigger and the grant are settled before the body is
 * validated (401, 403 and 404 come before 422); the admission (idempotency, token and workflow
 * limits, the job) is one group-committed repository call.
 */

const RunBodySchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    ref: { type: 'string', minLength: 1, maxLength: MAX_REF_LENGTH },
    debug: { type: 'boolean' },
    params: { type: 'object', description: 'arbitrary payload passed to the workflow steps' },
    workflowName: { type: 'string', maxLength: 255, description: 'required for scopeType agent; ignored otherwise' },
    force: { type: 'boolean', description: 'bypass the workflow rate limit; owner tokens only' },
    forceReason: { type: 'string', maxLength: MAX_FORCE_REASON_LENGTH, description: 'required with force=true' },
  },
} as const;

const AsyncResponseSchema = {
  type: 'object',
  required: ['jobId', 'status', 'statusUrl'],
  properties: {
    jobId: { type: 'string' },
    status: { type: 'string', enum: JOB_STATUSES },
    statusUrl: { type: 'string' },
    idempotent: { type: 'boolean' },
  },
} as const;

const SyncResponseSchema = {
  type: 'object',
  required: ['jobId', 'status', 'exitCode', 'errorMessage', 'output', 'statusUrl'],
  properties: {
    jobId: { type: 'string' },
    status: { type: 'string', enum: JOB_STATUSES },
    exitCode: { type: ['integer', 'null'] },
    errorMessage: { type: ['string', 'null'] },
    output: { type: 'object', additionalProperties: true },
    statusUrl: { type: 'string' },
    timedOut: { type: 'boolean' },
    idempotent: { type: 'boolean' },
  },
} as const;

/** Both 429 shapes of the spec: token limit (`retryAfter`) and workflow limit (`window`). */
const RateLimitedSchema = {
  type: 'object',
  required: ['statusCode', 'code', 'message'],
  properties: {
    statusCode: { type: 'integer' },
    code: { type: 'string' },
    message: { type: 'string' },
    retryAfter: { type: 'integer' },
    window: { type: 'string', enum: ['minute', 'hour', 'day'] },
  },
} as const;

interface Caller {
  token: AuthenticatingApiToken;
  target: RunTarget;
}

export async function triggerRunRoutes(app: FastifyInstance): Promise<void> {
  const { repos, clock, audit, jobEvents } = app.ctx;
  const targets = new RunTargets(repos);
  const callers = new WeakMap<FastifyRequest, Caller>();
  /** Sync waits in progress; cancelled (answered with the current status) when the server closes. */
  const waits = new Set<() => void>();
  let closing = false;
  app.addHook('preClose', (done) => {
    closing = true;
    for (const cancel of waits) cancel();
    done();
  });

  /**
   * 401, 403 (no trigger grant), 404 (unknown trigger), 403 (trigger outside the grant): in
   * `onRequest`, before the body is read, so these come first whatever the body is.
   */
  async function identifyCaller(request: FastifyRequest): Promise<void> {
    const { id } = request.params as { id: string };
    // One reading of the change counter serves both memory caches of the request.
    const generation = await repos.changeCounter.generation();
    const token = await requireApiToken(request, generation);
    const granted = requireTriggerGrant(token);
    const target = await targets.trigger(token.orgId, id, generation);
    if (!target) throw notFound('Trigger');
    checkTriggerGranted(granted, target.trigger.id);
    callers.set(request, { token, target });
  }

  /** Every field is optional, so no body at all means `{}` (a JSON `null` is still refused). */
  async function defaultBody(request: FastifyRequest): Promise<void> {
    if (request.body === undefined) request.body = {};
  }

  app.post<{ Params: { id: string }; Body: TriggerRunBody | undefined }>(
    '/triggers/:id/run',
    {
      onRequest: identifyCaller,
      preValidation: defaultBody,
      schema: {
        summary: 'Run a trigger: a job on its agent; async answers at once, sync waits for the result',
        tags: ['public'],
        security: [{ apiToken: [] }],
        params: idParams('id'),
        querystring: noQuery,
        body: RunBodySchema,
        response: {
          200: SyncResponseSchema,
          202: AsyncResponseSchema,
          429: RateLimitedSchema,
          ...errorResponses(401, 403, 404, 409, 422),
        },
      },
    },
    async (request, reply) => {
      const { token, target } = callers.get(request)!;
      const { trigger } = target;
      const body: TriggerRunBody = request.body ?? {};
      const key = idempotencyKeyOf(request.headers[IDEMPOTENCY_HEADER]);
      const run = resolveRunRequest(target, body, token);
      const workflow = await target.workflow(run.workflowName);
      if (!workflow) throw workflowNotFound(run.workflowName);
      const params = await checkRunFileRefs(
        workflow.paramsSchema,
        resolveRunParams(workflow.paramsSchema, body.params),
        token,
        app.ctx.files,
      );

      const now = clock.now();
      const jobId = newTimeOrderedId(now);
      const admission = await repos.triggerRuns.admit({
        job: {
          id: jobId,
          orgId: trigger.orgId,
          kind: 'trigger',
          triggerId: trigger.id,
          agentId: trigger.agentId,
          workflowId: workflow.id,
          workflowName: workflow.name,
          ref: run.ref,
          debug: run.debug,
          params,
          forced: run.forced,
          forceReason: run.forceReason,
          apiTokenId: token.id,
          userId: token.userId,
          timeoutMs: workflow.timeoutMs,
          createdAt: new Date(now).toISOString(),
        },
        now,
        idempotency: key === null ? null : { key, requestHash: requestHash(request.body), ttlMs: IDEMPOTENCY_TTL_MS },
        token: { id: token.id, limits: token.rateLimit },
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
            actorType: 'api_token',
            actorId: token.id,
            action: 'rate_limit.block',
            targetType: scope === 'workflow' ? 'workflow' : 'api_token',
            targetId: scope === 'workflow' ? workflow.id : token.id,
            metadata: {
              scope,
              window: refusal.window,
              limit: refusal.limit,
              observed: refusal.observed,
              ...(scope === 'workflow' ? { workflowId: workflow.id } : {}),
              jobId: admission.jobId,
            },
          });
          void reply.code(429).header('retry-after', String(refusal.retryAfter));
          return scope === 'token' ? tokenLimitBody(refusal) : workflowLimitBody(workflow.name, refusal);
        }
        case 'admitted':
          jobEvents.jobCreated(trigger.agentId, jobId);
          if (run.forced) {
            await audit.record({
              orgId: trigger.orgId,
              actorType: 'api_token',
              actorId: token.id,
              action: 'trigger.force_run',
              targetType: 'trigger',
              targetId: trigger.id,
              metadata: { forceReason: run.forceReason, jobId, workflowName: workflow.name },
            });
          }
          if (trigger.responseMode === 'async') {
            return reply.code(202).send({ jobId, status: 'pending', statusUrl: statusUrl(jobId) });
          }
          return syncAnswer(reply, jobId, trigger.responseTimeoutMs, false);
        case 'repeated':
          // The first call's answer again (spec: the async status is `pending` or `queued`);
          // the job's progress is on its statusUrl, as for the first call.
          if (trigger.responseMode === 'async') {
            return reply.code(202).send({
              jobId: admission.jobId,
              status: 'pending',
              statusUrl: statusUrl(admission.jobId),
              idempotent: true,
            });
          }
          return syncAnswer(reply, admission.jobId, trigger.responseTimeoutMs, true);
      }
    },
  );

  /**
   * The sync answer: subscribes to the job's end first, then reads it (it may have ended before),
   * and waits at most `timeoutMs` (less when the client goes away or the server closes).
   */
  async function syncAnswer(reply: FastifyReply, jobId: string, timeoutMs: number, idempotent: boolean) {
    const aborted = new AbortController();
    const onClose = () => {
      if (!reply.raw.writableFinished) aborted.abort();
    };
    reply.raw.once('close', onClose);
    const wait = jobEvents.waitForFinish(jobId, timeoutMs, aborted.signal);
    waits.add(wait.cancel);
    let job: JobResult | null;
    try {
      job = await repos.triggerRuns.jobResult(jobId);
      if (job && !isTerminalJobStatus(job.status)) {
        await wait.done;
        job = await repos.triggerRuns.jobResult(jobId);
      }
    } finally {
      wait.cancel();
      waits.delete(wait.cancel);
      reply.raw.off('close', onClose);
    }
    if (!job) throw notFound('Job');
    // Answered because the server is closing: the connection must not stay open for keep-alive.
    if (closing) void reply.header('connection', 'close');
    const timedOut = !isTerminalJobStatus(job.status);
    return reply.code(200).send({
      jobId,
      status: job.status,
      exitCode: job.exitCode,
      errorMessage: job.errorMessage,
      output: job.output ?? {},
      statusUrl: statusUrl(jobId),
      ...(timedOut ? { timedOut: true } : {}),
      ...(idempotent ? { idempotent: true } : {}),
    });
  }
}

import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { isTerminalJobStatus, JOB_STATUSES } from '@drover/shared';
import type { JobResult } from '../domain/model/trigger-runs.js';
import { IDEMPOTENCY_HEADER, idempotencyKeyOf, MAX_IDEMPOTENCY_KEY_LENGTH } from '../domain/trigger-run/idempotency.js';
import { tokenLimitBody, workflowLimitBody } from '../domain/trigger-run/rate-windows.js';
import {
  MAX_FORCE_REASON_LENGTH,
  MAX_REF_LENGTH,
  statusUrl,
  type TriggerRunBody,
} from '../domain/trigger-run/request.js';
import type { RunActor, RunOutcome, TriggerRunService } from '../domain/trigger-run/run-trigger.js';
import type { RunTarget } from '../domain/trigger-run/run-targets.js';
import { notFound, placeValidation } from '../errors.js';
import { headerValues } from './header-values.js';
import { BATCH_STATUSES } from '../domain/model/batches.js';
import type { BatchService } from '../domain/fleet/batch-service.js';
import { batchStatus, batchStatusUrl } from '../domain/fleet/batch-service.js';
import { asyncRunExample, runBodyExample, syncRunExample } from './schemas/examples.js';
import { named } from './schemas/named.js';

/**
 * What every HTTP way of running a trigger shares (the public `POST /v1/triggers/:id/run` and a
 * run by hand, `POST /v1/orgs/:orgId/triggers/:id/run`): the body, the answers (202 async, 200
 * sync with the result, 429 for a limit) and the sync wait, which ends when the client goes away
 * or the server closes. The run itself is the domain's (domain/trigger-run/run-trigger.ts).
 */

export const RunBodySchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    ref: { type: 'string', minLength: 1, maxLength: MAX_REF_LENGTH },
    debug: { type: 'boolean' },
    params: {
      type: 'object',
      additionalProperties: true,
      description:
        "arbitrary payload passed to the workflow steps; checked against the workflow's paramsSchema when it declares one",
    },
    workflowName: { type: 'string', maxLength: 255, description: 'required for scopeType agent; ignored otherwise' },
    force: { type: 'boolean', description: 'bypass the workflow rate limit; owners only' },
    forceReason: { type: 'string', maxLength: MAX_FORCE_REASON_LENGTH, description: 'required with force=true' },
  },
  examples: [runBodyExample],
} as const;

const AsyncResponseSchema = named('RunAccepted', {
  type: 'object',
  required: ['jobId', 'status', 'statusUrl'],
  properties: {
    jobId: { type: 'string' },
    status: { type: 'string', enum: JOB_STATUSES },
    statusUrl: { type: 'string' },
    agentId: {
      type: 'string',
      description: 'a trigger on a pool (fanout one): the agent the job went to; absent while it waits for one',
    },
    idempotent: { type: 'boolean' },
  },
  examples: [asyncRunExample],
} as const);

const SyncResponseSchema = named('RunResult', {
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
  examples: [syncRunExample],
} as const);

/** A batch's job as a sync answer shows it (docs/fleets.md): one per agent. */
const BatchJobResultSchema = {
  type: 'object',
  required: ['jobId', 'agentId', 'agentName', 'status', 'exitCode', 'errorMessage', 'output'],
  properties: {
    jobId: { type: 'string' },
    agentId: { type: ['string', 'null'] },
    agentName: { type: ['string', 'null'] },
    status: { type: 'string', enum: JOB_STATUSES },
    exitCode: { type: ['integer', 'null'] },
    errorMessage: { type: ['string', 'null'] },
    output: { type: 'object', additionalProperties: true },
  },
} as const;

/** The async answer of a `fanout: all` trigger: its batch (docs/fleets.md, "Batches"). */
export const BatchAcceptedSchema = named('BatchAccepted', {
  type: 'object',
  required: ['batchId', 'jobIds', 'jobCount', 'status', 'statusUrl'],
  properties: {
    batchId: { type: 'string' },
    jobIds: { type: 'array', items: { type: 'string' } },
    jobCount: { type: 'integer' },
    status: { type: 'string', enum: ['pending'] },
    statusUrl: { type: 'string' },
    idempotent: { type: 'boolean' },
  },
  examples: [
    {
      batchId: '019ac3e2-6b1f-7c4e-9d2a-3f5b6c7d8e9f',
      jobIds: ['019ac3e2-6b20-7d11-8e0f-1a2b3c4d5e6f', '019ac3e2-6b20-7d12-9f10-2b3c4d5e6f70'],
      jobCount: 2,
      status: 'pending',
      statusUrl: '/api/batches/019ac3e2-6b1f-7c4e-9d2a-3f5b6c7d8e9f',
    },
  ],
} as const);

/** The sync answer of a `fanout: all` trigger, once every job ended or the timeout passed. */
export const BatchResultSchema = named('BatchResult', {
  type: 'object',
  required: ['batchId', 'status', 'jobs', 'statusUrl'],
  properties: {
    batchId: { type: 'string' },
    status: { type: 'string', enum: BATCH_STATUSES },
    jobs: { type: 'array', items: BatchJobResultSchema },
    statusUrl: { type: 'string' },
    timedOut: { type: 'boolean' },
    idempotent: { type: 'boolean' },
  },
  examples: [
    {
      batchId: '019ac3e2-6b1f-7c4e-9d2a-3f5b6c7d8e9f',
      status: 'partial',
      jobs: [
        {
          jobId: '019ac3e2-6b20-7d11-8e0f-1a2b3c4d5e6f',
          agentId: '6f1c2b8e-4d3a-4f5b-9c7d-0e1f2a3b4c5d',
          agentName: 'gw-berlin-01',
          status: 'success',
          exitCode: 0,
          errorMessage: null,
          output: { rotated: 'true' },
        },
        {
          jobId: '019ac3e2-6b20-7d12-9f10-2b3c4d5e6f70',
          agentId: '7a2d3c9f-5e4b-4a6c-8d8e-1f2a3b4c5d6e',
          agentName: 'gw-berlin-02',
          status: 'rejected',
          exitCode: null,
          errorMessage: 'Agent gw-berlin-02 does not report the workflow `rotate-certs`',
          output: {},
        },
      ],
      statusUrl: '/api/batches/019ac3e2-6b1f-7c4e-9d2a-3f5b6c7d8e9f',
    },
  ],
} as const);

/**
 * What the API description adds to a run's answers: a selector trigger with `fanout: all` answers
 * with its batch. Route `config` read by the description (http/app.ts); the answers themselves
 * are written by `runAnswerer`, a batch's without the single job's serializer.
 */
export const batchAnswers = {
  otherAnswers: { 200: BatchResultSchema, 202: BatchAcceptedSchema },
  // Read by the admission itself (domain/trigger-run/idempotency.ts): described, not validated here.
  documented: {
    headers: {
      [IDEMPOTENCY_HEADER]: {
        type: 'string',
        minLength: 1,
        maxLength: MAX_IDEMPOTENCY_KEY_LENGTH,
        description:
          'Runs once per key (per trigger, for 24 hours): a retry with the same key and the same body gets the first ' +
          "call's answer (`idempotent: true`); the same key with another body is 409 `idempotency_conflict`",
      },
    },
  },
} as const;

/** Both 429 shapes of docs/errors.md: token limit (`retryAfter`) and workflow limit (`window`). */
const RateLimitedSchema = {
  type: 'object',
  required: ['statusCode', 'code', 'message'],
  properties: {
    statusCode: { type: 'integer', enum: [429] },
    code: { type: 'string', enum: ['rate_limited'] },
    message: { type: 'string' },
    retryAfter: { type: 'integer', description: "a token's limit: seconds until a call may succeed" },
    window: {
      type: 'string',
      enum: ['minute', 'hour', 'day'],
      description: "the workflow's limit: the window that is full",
    },
  },
} as const;

/** The success and limit answers of a run; each route adds its own error statuses. */
export const runResponses = { 200: SyncResponseSchema, 202: AsyncResponseSchema, 429: RateLimitedSchema } as const;

/** Every field is optional, so no body at all means `{}` (a JSON `null` is still refused). */
export async function defaultRunBody(request: FastifyRequest): Promise<void> {
  if (request.body === undefined) request.body = {};
}

export type RunAnswer = (
  request: FastifyRequest<{ Body: TriggerRunBody | undefined }>,
  reply: FastifyReply,
  run: { target: RunTarget; actor: RunActor },
) => Promise<unknown>;

/**
 * Runs a trigger for a request and answers it. Registered once per plugin: the sync waits in
 * progress end (answered with the job's current status) when the server closes.
 */
export function runAnswerer(app: FastifyInstance, runs: TriggerRunService, batches: BatchService): RunAnswer {
  const closing = new AbortController();
  app.addHook('preClose', (done) => {
    closing.abort();
    done();
  });

  /**
   * What ends a sync wait before its time: the client going away, or the server closing. `release`
   * drops the listener once the wait is over.
   */
  function waitSignal(reply: FastifyReply): { signal: AbortSignal; release(): void } {
    const gone = new AbortController();
    const onClose = () => {
      if (!reply.raw.writableFinished) gone.abort();
    };
    reply.raw.once('close', onClose);
    // Gone while the job (or batch) was admitted: its 'close' came before the listener. (The request
    // itself is destroyed once its body was read: its socket tells whether the client is still there.)
    if (reply.raw.destroyed || reply.request.raw.socket?.destroyed === true) onClose();
    return { signal: AbortSignal.any([gone.signal, closing.signal]), release: () => reply.raw.off('close', onClose) };
  }

  /** The sync answer: the job's result, waited for at most `timeoutMs` (less when the client goes away or the server closes). */
  async function syncAnswer(reply: FastifyReply, jobId: string, timeoutMs: number, idempotent: boolean) {
    const wait = waitSignal(reply);
    let job: JobResult | null;
    try {
      job = await runs.waitForResult(jobId, timeoutMs, wait.signal);
    } finally {
      wait.release();
    }
    if (!job) throw notFound('Job');
    // Answered because the server is closing: the connection must not stay open for keep-alive.
    if (closing.signal.aborted) void reply.header('connection', 'close');
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

  /** A batch's sync answer: its jobs once every one ended, or as they are after `timeoutMs`. */
  async function syncBatchAnswer(
    reply: FastifyReply,
    orgId: string,
    batchId: string,
    timeoutMs: number,
    idempotent: boolean,
  ) {
    const wait = waitSignal(reply);
    let result: Awaited<ReturnType<BatchService['waitForEnd']>>;
    try {
      result = await batches.waitForEnd(orgId, batchId, timeoutMs, wait.signal);
    } finally {
      wait.release();
    }
    if (closing.signal.aborted) void reply.header('connection', 'close');
    const counts = Object.fromEntries(JOB_STATUSES.map((s) => [s, 0])) as Record<(typeof JOB_STATUSES)[number], number>;
    for (const job of result.jobs) counts[job.status] += 1;
    return reply
      .code(200)
      .serializer(JSON.stringify)
      .type('application/json; charset=utf-8')
      .send({
        batchId,
        status: batchStatus(counts, result.jobs.length),
        jobs: result.jobs.map(({ jobId, agentId, agentName, status, exitCode, errorMessage, output }) => ({
          jobId,
          agentId,
          agentName,
          status,
          exitCode,
          errorMessage,
          output,
        })),
        statusUrl: batchStatusUrl(batchId),
        ...(result.ended ? {} : { timedOut: true }),
        ...(idempotent ? { idempotent: true } : {}),
      });
  }

  return async (request, reply, { target, actor }) => {
    // Node joins a header sent twice into one value (`a, b`): the distinct values tell a key sent
    // twice, which is refused, from one key that holds a comma.
    const sent = headerValues(request, IDEMPOTENCY_HEADER);
    const idempotencyKey = idempotencyKeyOf(sent.length === 0 ? undefined : sent.length === 1 ? sent[0] : sent);
    let outcome: RunOutcome;
    try {
      outcome = await runs.run({ target, actor, request: request.body ?? {}, idempotencyKey });
    } catch (error) {
      throw placeValidation(error, 'body');
    }
    if (outcome.outcome === 'rate_limited') {
      const { refusal, scope } = outcome;
      void reply.code(429).header('retry-after', String(refusal.retryAfter));
      return scope === 'token' ? tokenLimitBody(refusal) : workflowLimitBody(outcome.workflowName, refusal);
    }
    if (outcome.outcome === 'batch') {
      const { batchId, jobIds, repeated, trigger } = outcome;
      if (trigger.responseMode === 'sync') {
        return syncBatchAnswer(reply, trigger.orgId, batchId, trigger.responseTimeoutMs, repeated);
      }
      return reply
        .code(202)
        .serializer(JSON.stringify)
        .type('application/json; charset=utf-8')
        .send({
          batchId,
          jobIds,
          jobCount: jobIds.length,
          status: 'pending',
          statusUrl: batchStatusUrl(batchId),
          ...(repeated ? { idempotent: true } : {}),
        });
    }
    const { jobId, repeated, trigger } = outcome;
    if (trigger.responseMode === 'async') {
      // A repeated key gets the first call's answer again (the async status is `pending`
      // or `queued`); the job's progress is on its statusUrl, as for the first call.
      return reply.code(202).send({
        jobId,
        status: 'pending',
        statusUrl: statusUrl(jobId),
        // A pool's job names its agent (the spec's single job answers as it always did).
        ...(trigger.fanout === 'one' && outcome.agentId ? { agentId: outcome.agentId } : {}),
        ...(repeated ? { idempotent: true } : {}),
      });
    }
    return syncAnswer(reply, jobId, trigger.responseTimeoutMs, repeated);
  };
}

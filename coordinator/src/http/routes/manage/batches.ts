import type { FastifyInstance, FastifyRequest } from 'fastify';
import { JOB_STATUSES } from '@drover/shared';
import { BATCH_STATUSES } from '../../../domain/model/batches.js';
import { notFound } from '../../../errors.js';
import { requireOrgRole, requireSession } from '../../auth/session.js';
import { requirePermission, type Action } from '../../../domain/orgs/permissions.js';
import { cursorQueryProperty, pageResponse, parseCursor, sendPage } from '../../pagination.js';
import { emptyBody, errorResponses, idParams, orgParams, uuid } from '../../schemas/common.js';
import { noQuery } from '../../schemas/management.js';
import { named } from '../../schemas/named.js';

const BATCHES_DEFAULT_LIMIT = 50;
const BATCHES_MAX_LIMIT = 200;

const nullableString = { type: ['string', 'null'] } as const;
const counts = {
  type: 'object',
  description: "how many of the batch's jobs are in each status",
  required: [...JOB_STATUSES],
  properties: Object.fromEntries(JOB_STATUSES.map((s) => [s, { type: 'integer' }])),
} as const;

const BATCH_FIELDS = {
  id: { type: 'string' },
  number: { type: 'integer', description: "the organization's number of the batch: 1, 2, 3, ... in creation order" },
  orgId: { type: 'string' },
  triggerId: { type: 'string' },
  workflowName: { type: 'string' },
  selector: { type: 'string', description: "the trigger's label selector when it was called" },
  maxParallel: { type: ['integer', 'null'], description: 'at most this many of its jobs handed out at a time' },
  source: { type: 'string', enum: ['webhook', 'cron', 'manual', 'slack', 'discord'] },
  status: {
    type: 'string',
    enum: BATCH_STATUSES,
    description:
      'pending (no job handed out yet), running (until every job ended), then success (all succeeded), failed (none did), partial, or cancelled (every job cancelled)',
  },
  counts,
  jobCount: { type: 'integer' },
  createdAt: { type: 'string', format: 'date-time' },
  endedAt: { type: ['string', 'null'], format: 'date-time', description: 'when its last job ended' },
} as const;

const batchExample = {
  id: '019ac3e2-6b1f-7c4e-9d2a-3f5b6c7d8e9f',
  number: 12,
  orgId: '5b1c0d2e-3f4a-4b5c-8d6e-7f8091a2b3c4',
  triggerId: '8c2f1a3b-4d5e-4f60-9a7b-8c9d0e1f2a3b',
  workflowName: 'rotate-certs',
  selector: 'role=gateway,site=berlin',
  maxParallel: 5,
  source: 'webhook',
  status: 'running',
  counts: { pending: 3, queued: 0, running: 5, success: 31, failed: 1, timed_out: 0, cancelled: 0, rejected: 0 },
  jobCount: 40,
  createdAt: '2026-11-28T09:30:00.000Z',
  endedAt: null,
};

export const BatchSchema = named('Batch', {
  type: 'object',
  required: Object.keys(BATCH_FIELDS),
  properties: BATCH_FIELDS,
  examples: [batchExample],
} as const);

const BatchJobSchema = {
  type: 'object',
  required: [
    'jobId',
    'number',
    'agentId',
    'agentName',
    'status',
    'exitCode',
    'errorMessage',
    'output',
    'createdAt',
    'startedAt',
    'finishedAt',
  ],
  properties: {
    jobId: { type: 'string' },
    number: { type: 'integer' },
    agentId: nullableString,
    agentName: nullableString,
    status: { type: 'string', enum: JOB_STATUSES },
    exitCode: { type: ['integer', 'null'] },
    errorMessage: nullableString,
    output: { type: 'object', additionalProperties: true },
    createdAt: { type: 'string', format: 'date-time' },
    startedAt: { type: ['string', 'null'], format: 'date-time' },
    finishedAt: { type: ['string', 'null'], format: 'date-time' },
  },
} as const;

export const BatchDetailSchema = named('BatchDetail', {
  type: 'object',
  required: [...Object.keys(BATCH_FIELDS), 'jobs'],
  properties: { ...BATCH_FIELDS, jobs: { type: 'array', items: BatchJobSchema, description: 'one per agent' } },
  examples: [{ ...batchExample, jobs: [] }],
} as const);

/** The batch's organization, for a member of it; 404 for anyone else, as for an unknown batch. */
async function batchOrg(
  app: FastifyInstance,
  request: FastifyRequest,
  batchId: string,
  action: Action = 'org.read',
): Promise<string> {
  const { userId } = await requireSession(request);
  const batch = await app.ctx.repos.batches.findById(batchId);
  const role = batch ? await app.ctx.repos.orgs.roleOf(batch.orgId, userId) : null;
  if (!batch || !role) throw notFound('Batch');
  requirePermission(role, action);
  return batch.orgId;
}

/** Registers a batch's detail at `path` (`/batches/:id` under /v1, and its dashboard address `/api/batches/:id`). */
export function registerBatchDetailRoute(app: FastifyInstance, path: string, operationId: string, summary: string) {
  app.get<{ Params: { id: string } }>(
    path,
    {
      schema: {
        operationId,
        summary,
        tags: ['dashboard'],
        params: idParams('id'),
        querystring: noQuery,
        response: { 200: BatchDetailSchema, ...errorResponses(401, 404, 422) },
      },
    },
    async (request) => {
      const { userId } = await requireSession(request);
      const orgId = await batchOrg(app, request, request.params.id);
      return app.ctx.batches.get({ orgId, userId }, request.params.id);
    },
  );
}

/** Batches of runs on many agents (docs/fleets.md): lists, details, cancel. */
export async function batchRoutes(app: FastifyInstance): Promise<void> {
  app.get<{ Params: { orgId: string }; Querystring: { triggerId?: string; limit: number; cursor?: string } }>(
    '/orgs/:orgId/batches',
    {
      schema: {
        operationId: 'listBatches',
        summary:
          'Batches of an organization (or of one of its triggers), newest first; next page cursor in the x-next-cursor header',
        tags: ['dashboard'],
        params: orgParams,
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: {
            triggerId: {
              ...uuid,
              description: 'only batches of this trigger (none for a trigger of another organization)',
            },
            limit: { type: 'integer', minimum: 1, maximum: BATCHES_MAX_LIMIT, default: BATCHES_DEFAULT_LIMIT },
            cursor: cursorQueryProperty,
          },
        },
        response: { 200: pageResponse(BatchSchema, 'batches'), ...errorResponses(401, 404, 422) },
      },
    },
    async (request, reply) => {
      const access = await requireOrgRole(request, request.params.orgId);
      const { triggerId, limit, cursor } = request.query;
      const batches = await app.ctx.batches.list(access, {
        triggerId,
        limit: limit + 1,
        beforeNumber: parseCursor(cursor),
      });
      return sendPage(reply, batches, limit, (b) => b.number);
    },
  );

  app.get<{ Params: { orgId: string; batchId: string } }>(
    '/orgs/:orgId/batches/:batchId',
    {
      schema: {
        operationId: 'getBatch',
        summary: 'A batch with its jobs, one per agent',
        tags: ['dashboard'],
        params: idParams('orgId', 'batchId'),
        querystring: noQuery,
        response: { 200: BatchDetailSchema, ...errorResponses(401, 404, 422) },
      },
    },
    async (request) => {
      const access = await requireOrgRole(request, request.params.orgId);
      return app.ctx.batches.get(access, request.params.batchId);
    },
  );

  registerBatchDetailRoute(
    app,
    '/batches/:id',
    'getBatchById',
    "A batch of one of the caller's organizations, with its jobs",
  );

  app.post<{ Params: { id: string } }>(
    '/batches/:id/cancel',
    {
      schema: {
        operationId: 'cancelBatch',
        summary: "Cancel every unfinished job of a batch (as a job's cancel: running ones are stopped by their agents)",
        tags: ['dashboard'],
        params: idParams('id'),
        body: emptyBody,
        response: { 200: BatchDetailSchema, ...errorResponses(401, 403, 404, 422) },
      },
    },
    async (request) => {
      const { userId } = await requireSession(request);
      const orgId = await batchOrg(app, request, request.params.id, 'jobs.cancel');
      return app.ctx.batches.cancel({ orgId, userId }, request.params.id);
    },
  );
}

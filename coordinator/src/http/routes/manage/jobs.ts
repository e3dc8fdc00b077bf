import { cursorQueryProperty, pageResponse, parseCursor, sendPage } from '../../pagination.js';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { JOB_STATUSES, LOG_STREAMS, type JobStatus } from '@drover/shared';
import { JOB_MESSAGE_KINDS, toJobNotificationView } from '../../../domain/chat/notifications/view.js';
import { OUTBOX_STATUSES } from '../../../domain/model/chat-outbox.js';
import { JOB_LOGS_DEFAULT_LIMIT, JOB_LOGS_MAX_LIMIT, JOB_LOGS_PAGE_MAX_BYTES } from '../../../domain/jobs/job-logs.js';
import { JOB_SOURCES, type Job, type JobSource } from '../../../domain/model/jobs.js';
import { CHAT_PROVIDERS } from '../../../domain/model/triggers.js';
import { notFound } from '../../../errors.js';
import { createdRange, createdRangeQueryProperties } from '../../created-range.js';
import { requireOrgRole, requireSession } from '../../auth/session.js';
import {
  emptyBody,
  errorResponses,
  idParams,
  nullableTimestamp,
  orgParams,
  timestamp,
  uuid,
} from '../../schemas/common.js';
import { named } from '../../schemas/named.js';
import { jobDetailExample, jobExample, runningJobExample } from '../../schemas/examples.js';

export const JOBS_DEFAULT_LIMIT = 50;
export const JOBS_MAX_LIMIT = 200;

const nullableString = { type: ['string', 'null'] } as const;
export const JOB_FIELDS = {
  id: uuid,
  number: { type: 'integer', description: "the organization's number of the job: 1, 2, 3, ... in creation order" },
  orgId: { ...uuid, description: 'the organization of the job (the dashboard reaches a job by its id alone)' },
  kind: { type: 'string', enum: ['trigger', 'update'] },
  source: {
    type: 'string',
    enum: JOB_SOURCES,
    description: 'webhook, cron, manual (run by hand), slack, discord; ota for an update job',
  },
  status: { type: 'string', enum: JOB_STATUSES },
  triggerId: { type: ['string', 'null'] },
  agentId: {
    type: ['string', 'null'],
    description: 'the agent that runs it; null while a job of a pool waits for one (docs/fleets.md)',
  },
  batchId: { type: ['string', 'null'], description: 'the batch it is one job of (docs/fleets.md), or null' },
  workflowId: { type: ['string', 'null'] },
  workflowName: { type: 'string' },
  ref: nullableString,
  debug: { type: 'boolean' },
  params: { type: 'object', additionalProperties: true },
  output: { type: ['object', 'null'], additionalProperties: true },
  exitCode: { type: ['integer', 'null'] },
  errorMessage: nullableString,
  forced: { type: 'boolean' },
  forceReason: nullableString,
  userId: { type: ['string', 'null'], description: 'who started it: the user, or the API token issuer' },
  createdAt: timestamp,
  queuedAt: nullableTimestamp,
  startedAt: nullableTimestamp,
  finishedAt: nullableTimestamp,
  chatOrigin: {
    type: ['object', 'null'],
    description: 'a chat run: who started it, where (docs/chat.md); null for every other job',
    required: ['provider', 'teamId', 'channelId', 'userId', 'userName'],
    properties: {
      provider: { type: 'string', enum: ['slack', 'discord'] },
      teamId: { type: 'string' },
      channelId: { type: 'string' },
      userId: { type: 'string' },
      userName: { type: 'string' },
    },
  },
  cancelRequestedAt: {
    ...nullableTimestamp,
    description: 'when a user asked to cancel the job (docs/jobs.md, "Cancellation"); null: never',
  },
} as const;

/** A job in lists (the dashboard's job table). Internal fields (seq, token ids, deadline) never leave. */
export const JobSchema = named('Job', {
  type: 'object',
  required: Object.keys(JOB_FIELDS),
  examples: [jobExample],
  properties: JOB_FIELDS,
} as const);

export const JobLogLineSchema = named('JobLogLine', {
  type: 'object',
  examples: jobDetailExample.logs,
  required: ['seq', 'at', 'stream', 'step', 'text'],
  properties: {
    seq: { type: 'integer' },
    at: timestamp,
    stream: { type: 'string', enum: LOG_STREAMS },
    step: {
      type: ['integer', 'null'],
      description:
        "the step's number from 1, as in the lines' text (`step 2 (build) ...`); null for the job's own lines",
    },
    text: { type: 'string' },
  },
} as const);

/** A chat message of the job: its notification (docs/chat.md, "Notifications"). */
export const JobNotificationSchema = named('JobNotification', {
  type: 'object',
  examples: jobDetailExample.notifications,
  required: [
    'kind',
    'provider',
    'teamId',
    'channelId',
    'status',
    'attempts',
    'lastError',
    'createdAt',
    'nextAttemptAt',
    'sentAt',
    'failedAt',
  ],
  properties: {
    kind: {
      type: 'string',
      enum: JOB_MESSAGE_KINDS,
      description:
        "notification (the trigger's, to its channel), reply (a chat run's outcome, to its writer) or answer (to the mention that started it)",
    },
    provider: { type: 'string', enum: CHAT_PROVIDERS },
    teamId: { type: 'string' },
    channelId: { type: 'string' },
    status: {
      type: 'string',
      enum: OUTBOX_STATUSES,
      description: 'pending (waiting for its next attempt), sending, sent, or failed (given up: see lastError)',
    },
    attempts: { type: 'integer', description: 'attempts made so far' },
    lastError: { ...nullableString, description: "why the last attempt failed, in the provider's words" },
    createdAt: timestamp,
    nextAttemptAt: nullableTimestamp,
    sentAt: nullableTimestamp,
    failedAt: nullableTimestamp,
  },
} as const);

/** A job with a page of its log lines and its chat notifications (`GET /v1/jobs/:id`, `GET /api/jobs/:id`). */
export const JobDetailSchema = named('JobDetail', {
  type: 'object',
  required: [
    ...Object.keys(JOB_FIELDS),
    'applicationId',
    'logs',
    'logsMore',
    'logsTotal',
    'logsDropped',
    'notifications',
  ],
  properties: {
    ...JOB_FIELDS,
    applicationId: {
      type: ['string', 'null'],
      description: "an update job's application (docs/ota.md), whose release `params` names; null for a trigger job",
    },
    logs: {
      type: 'array',
      items: JobLogLineSchema,
      description: `a page of the log in seq order: the lines after \`logsAfter\`, at most \`logsLimit\` of them and about ${JOB_LOGS_PAGE_MAX_BYTES / 1024 / 1024} MiB of text`,
    },
    logsMore: {
      type: 'boolean',
      description: "more lines are stored after this page: ask again with `logsAfter` set to its last line's seq",
    },
    logsTotal: { type: 'integer', description: "the lines stored for the job now, the gap's line included" },
    logsDropped: {
      type: 'integer',
      description:
        'lines dropped from the middle of the log when it passed its limit (DROVER_JOB_LOG_MAX_BYTES); one line where the gap is says so',
    },
    notifications: {
      type: 'array',
      items: JobNotificationSchema,
      description: 'the messages posted to chat about the job, and how their delivery went',
    },
  },
  examples: [jobDetailExample],
} as const);

const jobDetailQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    logsAfter: { type: 'integer', minimum: 0, default: 0, description: 'only log lines with a greater seq' },
    logsLimit: {
      type: 'integer',
      minimum: 0,
      maximum: JOB_LOGS_MAX_LIMIT,
      default: JOB_LOGS_DEFAULT_LIMIT,
      description: 'the most log lines in the answer (0: the job alone, with logsMore and logsTotal)',
    },
  },
} as const;

/** The sources of trigger jobs (the list never has update jobs, whose source is `ota`). */
const TRIGGER_JOB_SOURCES = JOB_SOURCES.filter((s) => s !== 'ota');

interface ListQuerystring {
  status?: JobStatus;
  triggerId?: string;
  batchId?: string;
  agentId?: string;
  source?: JobSource;
  createdAfter?: string;
  createdBefore?: string;
  limit: number;
  cursor?: string;
}

interface DetailQuerystring {
  logsAfter: number;
  logsLimit: number;
}

/**
 * The job detail for a signed-in member of the job's organization (update jobs included); a job
 * of another organization is 404, as an unknown one.
 */
async function jobDetail(app: FastifyInstance, request: FastifyRequest, id: string, q: DetailQuerystring) {
  const { userId } = await requireSession(request);
  const { repos, jobLogs } = app.ctx;
  const job = await repos.jobs.findById(id);
  if (!job || !(await repos.orgs.roleOf(job.orgId, userId))) throw notFound('Job');
  const log = await jobLogs.read(job.id, q.logsAfter, q.logsLimit);
  const { messages, damaged } = await repos.chatOutbox.listByJob(job.id);
  for (const { id: messageId, column, error } of damaged) {
    request.log.error(
      { err: error, jobId: job.id, messageId, column },
      `chat message ${messageId} of job ${job.id} is left out of its page: its ${column} does not parse (a damaged database)`,
    );
  }
  const notifications = messages.map(toJobNotificationView);
  const applicationId =
    job.kind === 'update'
      ? ((await repos.deviceBindings.applicationsOfUpdateJobs([job.id]))[0]?.applicationId ?? null)
      : null;
  return { ...job, applicationId, ...log, notifications } satisfies Job & {
    applicationId: string | null;
    logs: unknown[];
    notifications: unknown[];
  };
}

/**
 * Registers the job detail at `path` (`/jobs/:id` under /v1, and the dashboard address
 * `/api/jobs/:id` that trigger runs return as `statusUrl`).
 */
export function registerJobDetailRoute(app: FastifyInstance, path: string, operationId: string, summary: string): void {
  app.get<{ Params: { id: string }; Querystring: DetailQuerystring }>(
    path,
    {
      schema: {
        operationId,
        summary,
        tags: ['dashboard'],
        params: idParams('id'),
        querystring: jobDetailQuery,
        response: { 200: JobDetailSchema, ...errorResponses(401, 404, 422) },
      },
    },
    (request) => jobDetail(app, request, request.params.id, request.query),
  );
}

/** Dashboard jobs: the trigger job list of an organization, any job's detail, and cancelling a job. */
export async function jobRoutes(app: FastifyInstance): Promise<void> {
  app.get<{ Params: { orgId: string }; Querystring: ListQuerystring }>(
    '/orgs/:orgId/jobs',
    {
      schema: {
        operationId: 'listJobs',
        summary: 'Trigger jobs of an organization, newest first; next page cursor in the x-next-cursor header',
        tags: ['dashboard'],
        params: orgParams,
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: {
            status: { type: 'string', enum: JOB_STATUSES, description: 'only jobs in this status' },
            triggerId: { ...uuid, description: 'only jobs of this trigger' },
            batchId: { ...uuid, description: 'only jobs of this batch' },
            agentId: { ...uuid, description: 'only jobs of this agent' },
            source: { type: 'string', enum: TRIGGER_JOB_SOURCES, description: 'only jobs from this source' },
            ...createdRangeQueryProperties('jobs'),
            limit: { type: 'integer', minimum: 1, maximum: JOBS_MAX_LIMIT, default: JOBS_DEFAULT_LIMIT },
            cursor: cursorQueryProperty,
          },
        },
        response: {
          200: pageResponse(JobSchema, 'jobs'),
          ...errorResponses(401, 403, 404, 422),
        },
      },
    },
    async (request, reply) => {
      const { orgId } = await requireOrgRole(request, request.params.orgId);
      const { limit, cursor, createdAfter, createdBefore, ...filters } = request.query;
      const beforeSeq = parseCursor(cursor);
      const range = createdRange(createdAfter, createdBefore);
      const jobs = await app.ctx.repos.jobs.listTriggerJobs(orgId, {
        ...filters,
        ...range,
        limit: limit + 1,
        beforeSeq,
      });
      return sendPage(reply, jobs, limit, (job) => job.seq);
    },
  );

  registerJobDetailRoute(
    app,
    '/jobs/:id',
    'getJob',
    "A job of one of the caller's organizations (update jobs included) with a page of its log lines",
  );

  app.post<{ Params: { id: string } }>(
    '/jobs/:id/cancel',
    {
      schema: {
        operationId: 'cancelJob',
        summary:
          'Cancel a job: one not started yet is cancelled immediately (200), a running one is stopped by its agent (202)',
        tags: ['dashboard'],
        params: idParams('id'),
        body: emptyBody,
        response: {
          200: { ...JobSchema, description: 'The job did not start: it is `cancelled` now' },
          202: {
            ...JobSchema,
            examples: [runningJobExample],
            description: 'The job is running: its agent was asked to stop it (`cancelRequestedAt`)',
          },
          ...errorResponses(401, 403, 404, 409, 422),
        },
      },
    },
    async (request, reply) => {
      const { userId } = await requireSession(request);
      const { outcome, job } = await app.ctx.cancels.cancel({ userId }, request.params.id);
      return reply.code(outcome === 'cancelled' ? 200 : 202).send(job);
    },
  );
}

import type { FastifyInstance } from 'fastify';
import { AGENT_STATUSES } from '../../../domain/model/agents.js';
import { PAUSED_REASONS } from '../../../domain/model/rollouts.js';
import {
  OUTCOMES,
  OVERVIEW_CRON_RUNS_SHOWN,
  OVERVIEW_DEFAULT_HOURS,
  OVERVIEW_FAILURES_SHOWN,
  OVERVIEW_MAX_HOURS,
  OVERVIEW_RUNNING_SHOWN,
} from '../../../domain/overview/overview-service.js';
import { requireOrgRole } from '../../auth/session.js';
import { errorResponses, orgParams, timestamp, uuid } from '../../schemas/common.js';
import { EXAMPLE_IDS, jobExample, runningJobExample } from '../../schemas/examples.js';
import { named } from '../../schemas/named.js';
import { JOB_FIELDS } from './jobs.js';

const count = { type: 'integer', minimum: 0 } as const;

const overviewJobExample = { ...jobExample, agentName: 'edge-lab-01', triggerName: 'nightly build' };

/** A job of the overview: the job with the names of its agent and trigger. */
export const OverviewJobSchema = named('OverviewJob', {
  type: 'object',
  required: [...Object.keys(JOB_FIELDS), 'agentName', 'triggerName'],
  examples: [overviewJobExample],
  properties: {
    ...JOB_FIELDS,
    agentName: { type: ['string', 'null'], description: "its agent's name; null: none (yet), or revoked long ago" },
    triggerName: { type: ['string', 'null'], description: "its trigger's name; null: the trigger was deleted" },
  },
} as const);

const overviewExample = {
  agents: { connected: 12, disconnected: 1, pending: 0, revoked: 2 },
  jobs: {
    buckets: [
      { start: '2026-11-25T08:00:00.000Z', success: 41, failed: 2, timed_out: 0, cancelled: 1, rejected: 0 },
      { start: '2026-11-25T09:00:00.000Z', success: 37, failed: 0, timed_out: 1, cancelled: 0, rejected: 0 },
    ],
    total: 84,
  },
  running: [{ ...runningJobExample, cancelRequestedAt: null, agentName: 'edge-lab-01', triggerName: 'nightly build' }],
  recentFailures: [
    {
      ...overviewJobExample,
      status: 'failed',
      output: null,
      exitCode: 1,
      errorMessage: 'step 1 (greet) exited with 1',
    },
  ],
  rollouts: [
    {
      releaseId: EXAMPLE_IDS.release,
      applicationId: EXAMPLE_IDS.app,
      applicationSlug: 'gateway-firmware',
      version: '2.4.0',
      channel: 'stable',
      status: 'running',
      pausedReason: null,
      currentWave: 1,
      waves: [1, 10, 100],
      deviceCount: 200,
      createdAt: '2026-11-25T09:00:00.000Z',
    },
  ],
  nextCronRuns: [{ triggerId: EXAMPLE_IDS.trigger, name: 'nightly build', at: '2026-11-26T02:00:00.000Z' }],
};

export const OverviewSchema = named('Overview', {
  type: 'object',
  required: ['agents', 'jobs', 'running', 'recentFailures', 'rollouts', 'nextCronRuns'],
  examples: [overviewExample],
  properties: {
    agents: {
      type: 'object',
      description: 'how many agents of the organization are in each status',
      required: AGENT_STATUSES,
      properties: Object.fromEntries(AGENT_STATUSES.map((s) => [s, count])),
    },
    jobs: {
      type: 'object',
      required: ['buckets', 'total'],
      properties: {
        buckets: {
          type: 'array',
          description:
            'one an hour (UTC, aligned to the hour), oldest first, the last the hour under way: the trigger jobs created in that hour that have ended, by outcome',
          items: {
            type: 'object',
            required: ['start', ...OUTCOMES],
            properties: { start: timestamp, ...Object.fromEntries(OUTCOMES.map((o) => [o, count])) },
          },
        },
        total: {
          ...count,
          description: "every trigger job created since the first bucket's start, whatever its status (open ones too)",
        },
      },
    },
    running: {
      type: 'array',
      items: OverviewJobSchema,
      description: `the running trigger jobs, newest first (at most ${OVERVIEW_RUNNING_SHOWN})`,
    },
    recentFailures: {
      type: 'array',
      items: OverviewJobSchema,
      description: `the failed and timed-out trigger jobs that ended last, newest first (at most ${OVERVIEW_FAILURES_SHOWN})`,
    },
    rollouts: {
      type: 'array',
      description: 'the staged rollouts in progress (running or paused), newest first',
      items: {
        type: 'object',
        required: [
          'releaseId',
          'applicationId',
          'applicationSlug',
          'version',
          'channel',
          'status',
          'pausedReason',
          'currentWave',
          'waves',
          'deviceCount',
          'createdAt',
        ],
        properties: {
          releaseId: uuid,
          applicationId: uuid,
          applicationSlug: { type: 'string' },
          version: { type: 'string' },
          channel: { type: 'string' },
          status: { type: 'string', enum: ['running', 'paused'] },
          pausedReason: { type: ['string', 'null'], enum: [...PAUSED_REASONS, null] },
          currentWave: { type: 'integer', description: 'the current wave, 0-based' },
          waves: { type: 'array', items: { type: 'number' }, description: "the plan's percentages of the devices" },
          deviceCount: { ...count, description: "the channel's devices when the release was published" },
          createdAt: timestamp,
        },
      },
    },
    nextCronRuns: {
      type: 'array',
      description: `the next occurrence of each enabled cron trigger, soonest first (at most ${OVERVIEW_CRON_RUNS_SHOWN} triggers)`,
      items: {
        type: 'object',
        required: ['triggerId', 'name', 'at'],
        properties: { triggerId: uuid, name: { type: 'string' }, at: timestamp },
      },
    },
  },
} as const);

/** The fleet at a glance, for any member of the organization (the dashboard's home page, `drover overview`). */
export async function overviewRoutes(app: FastifyInstance): Promise<void> {
  app.get<{ Params: { orgId: string }; Querystring: { hours: number } }>(
    '/orgs/:orgId/overview',
    {
      schema: {
        operationId: 'getOverview',
        summary:
          "The organization at a glance: agents by status, the last hours' trigger jobs by outcome an hour at a time, running jobs, the last failures, rollouts in progress, the next cron runs",
        tags: ['dashboard'],
        params: orgParams,
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: {
            hours: {
              type: 'integer',
              minimum: 1,
              maximum: OVERVIEW_MAX_HOURS,
              default: OVERVIEW_DEFAULT_HOURS,
              description: 'the hours counted, the one under way included: one bucket each',
            },
          },
        },
        response: { 200: OverviewSchema, ...errorResponses(401, 404, 422) },
      },
    },
    async (request) => {
      const { orgId } = await requireOrgRole(request, request.params.orgId);
      return app.ctx.overview.read(orgId, request.query.hours);
    },
  );
}

import type { FastifyInstance } from 'fastify';
import {
  CHAT_PROVIDERS,
  CRON_MISSED_POLICIES,
  CRON_OVERLAP_POLICIES,
  FANOUTS,
  NOTIFY_ON,
  TRIGGER_TYPES,
  type TriggerType,
} from '../../../domain/model/triggers.js';
import { MAX_SELECTOR_LENGTH } from '@drover/shared';
import { OCCURRENCE_OUTCOMES, SKIP_REASONS } from '../../../domain/model/cron-occurrences.js';
import { OCCURRENCES_MAX_LIMIT } from '../../../domain/triggers/trigger-service.js';
import { occurrenceView } from '../../../domain/cron/trigger-view.js';
import { JOB_STATUSES } from '@drover/shared';
import { isoAt, LAST_STORABLE_MS } from '../../../util/clock.js';
import {
  cursorQueryProperty,
  NEXT_CURSOR_HEADER,
  countedPageResponse,
  pageResponse,
  parseCursor,
  parsePositionCursor,
  positionCursor,
  sendPage,
  TOTAL_COUNT_HEADER,
} from '../../pagination.js';
import { MAX_NAME_LENGTH } from '../../../domain/names.js';
import { MAX_CRON_EXPRESSION_LENGTH } from '../../../domain/cron/triggers-cron.js';
import {
  CHAT_USER_ID_PATTERN,
  CONFIG_FIELDS,
  MAX_ALLOWED_REFS,
  MAX_CHAT_ALLOWED_USERS,
  MAX_CHAT_KEYWORD_LENGTH,
  MAX_REF_LENGTH,
  MAX_WORKFLOW_NAME_LENGTH,
  RESPONSE_TIMEOUT_MS,
  WORKFLOW_NAME_PATTERN,
  type TriggerInput,
} from '../../../domain/triggers/triggers.js';
import { requireOrgRole } from '../../auth/session.js';
import {
  errorResponses,
  idParams,
  NO_WHITESPACE_PATTERN,
  nullableTimestamp,
  orgParams,
  timestamp,
  uuid,
} from '../../schemas/common.js';
import { noQuery } from '../../schemas/management.js';
import { occurrenceExample, triggerExample } from '../../schemas/examples.js';
import { createTriggerBodyExample } from '../../schemas/examples.js';
import { named } from '../../schemas/named.js';
import { entityTag, etagHeader, ifMatchHeader, ifMatchVersion } from '../../if-match.js';

/**
 * Triggers of an organization. Any member lists, reads, creates and changes them (members run
 * triggers too); deleting one is for owners, as deleting an app is in the spec.
 */

const chatId = { type: ['string', 'null'], minLength: 1, maxLength: 128, pattern: NO_WHITESPACE_PATTERN } as const;

const configProperties = {
  name: { type: 'string', minLength: 1, maxLength: MAX_NAME_LENGTH },
  type: { type: 'string', enum: TRIGGER_TYPES, description: 'omitted: webhook' },
  agentId: {
    ...uuid,
    type: ['string', 'null'],
    description: 'the agent it runs on; or name agents with agentSelector',
  },
  agentSelector: {
    type: ['string', 'null'],
    minLength: 1,
    maxLength: MAX_SELECTOR_LENGTH,
    description:
      'a label selector (docs/fleets.md), instead of agentId: its runs go to the agents it selects, as fanout says',
  },
  fanout: {
    type: ['string', 'null'],
    enum: [...FANOUTS, null],
    description:
      'with agentSelector: "one" runs each call on one agent of the pool (the least busy with room, or the first to have room), "all" on every agent selected (a batch)',
  },
  maxParallel: {
    type: ['integer', 'null'],
    minimum: 1,
    maximum: 100_000,
    description: 'fanout "all": at most this many of a batch\'s jobs handed out at a time; null: all at once',
  },
  scopeType: { type: 'string', enum: ['workflow', 'agent'] },
  workflowName: {
    type: ['string', 'null'],
    minLength: 1,
    maxLength: MAX_WORKFLOW_NAME_LENGTH,
    pattern: WORKFLOW_NAME_PATTERN,
    description:
      'required with scopeType workflow, refused with scopeType agent; the workflow need not be reported yet',
  },
  responseMode: {
    type: 'string',
    enum: ['async', 'sync'],
    description: 'required, except for a cron trigger: its runs answer no caller (it is async, sync is refused)',
  },
  responseTimeoutMs: {
    type: 'integer',
    minimum: RESPONSE_TIMEOUT_MS.min,
    maximum: RESPONSE_TIMEOUT_MS.max,
    description: `sync wait; default ${RESPONSE_TIMEOUT_MS.default}; refused for a cron trigger`,
  },
  allowedRefs: {
    type: ['array', 'null'],
    minItems: 1,
    maxItems: MAX_ALLOWED_REFS,
    uniqueItems: true,
    items: { type: 'string', minLength: 1, maxLength: MAX_REF_LENGTH },
    description: 'null or omitted: every ref is accepted',
  },
  allowDebug: { type: 'boolean', description: 'default false; true is refused for a cron trigger' },
  notifyProvider: { type: ['string', 'null'], enum: [...CHAT_PROVIDERS, null] },
  notifyTeamId: chatId,
  notifyChannelId: chatId,
  notifyOn: { type: 'string', enum: NOTIFY_ON, description: 'default: always with a provider, none without' },
  cronExpression: { type: ['string', 'null'], minLength: 1, maxLength: MAX_CRON_EXPRESSION_LENGTH },
  cronTimezone: { type: ['string', 'null'], minLength: 1, maxLength: 64, description: 'IANA zone; default UTC' },
  cronEnabled: { type: ['boolean', 'null'], description: 'default true' },
  cronMissedPolicy: {
    type: ['string', 'null'],
    enum: [...CRON_MISSED_POLICIES, null],
    description: 'cron: occurrences missed while down or disabled; default skip (docs/schedules.md)',
  },
  cronOverlapPolicy: {
    type: ['string', 'null'],
    enum: [...CRON_OVERLAP_POLICIES, null],
    description: 'cron: an occurrence while the previous scheduled job is open; default skip',
  },
  params: {
    type: ['object', 'null'],
    additionalProperties: true,
    description: "cron: the params of each scheduled run, checked against the workflow's paramsSchema",
  },
  ref: {
    type: ['string', 'null'],
    minLength: 1,
    maxLength: MAX_REF_LENGTH,
    description: 'cron: the ref of each scheduled run; one of allowedRefs when set',
  },
  chatTeamId: chatId,
  chatChannelId: chatId,
  chatKeyword: {
    type: ['string', 'null'],
    minLength: 1,
    maxLength: MAX_CHAT_KEYWORD_LENGTH,
    pattern: NO_WHITESPACE_PATTERN,
  },
  chatAllowedUserIds: {
    type: ['array', 'null'],
    minItems: 1,
    maxItems: MAX_CHAT_ALLOWED_USERS,
    uniqueItems: true,
    items: { type: 'string', pattern: CHAT_USER_ID_PATTERN },
    description:
      "chat: the provider's user ids of the people who may run it (Slack U…, Discord numeric ids); null or omitted: anyone in the channel",
  },
} as const;

const nullableString = { type: ['string', 'null'] } as const;

const OccurrenceSchema = named('CronOccurrence', {
  type: 'object',
  examples: [occurrenceExample],
  required: ['scheduledAt', 'outcome', 'jobId', 'batchId', 'jobStatus', 'reason', 'firstScheduledAt', 'recordedAt'],
  properties: {
    scheduledAt: { ...timestamp, description: 'the occurrence (UTC); for a run of missed ones, the last' },
    outcome: { type: 'string', enum: OCCURRENCE_OUTCOMES },
    jobId: { ...nullableString, description: 'with job_created: the job (pending, or rejected with its reason)' },
    batchId: {
      ...nullableString,
      description: 'with job_created on a trigger with fanout "all": the batch the occurrence made (docs/fleets.md)',
    },
    jobStatus: { type: ['string', 'null'], enum: [...JOB_STATUSES, null] },
    reason: { type: ['string', 'null'], enum: [...SKIP_REASONS, null], description: 'with skipped' },
    firstScheduledAt: {
      ...nullableTimestamp,
      description: 'a record standing for a run of missed occurrences: the first of them',
    },
    recordedAt: timestamp,
  },
} as const);

export const TriggerSchema = named('Trigger', {
  type: 'object',
  examples: [triggerExample],
  required: ['id', ...CONFIG_FIELDS, 'createdAt', 'updatedAt', 'nextRunAt', 'nextRuns', 'lastOccurrences'],
  properties: {
    id: uuid,
    name: { type: 'string' },
    type: { type: 'string', enum: TRIGGER_TYPES },
    agentId: nullableString,
    agentSelector: nullableString,
    fanout: { type: ['string', 'null'], enum: [...FANOUTS, null] },
    maxParallel: { type: ['integer', 'null'] },
    scopeType: { type: 'string', enum: ['workflow', 'agent'] },
    workflowName: nullableString,
    responseMode: { type: 'string', enum: ['async', 'sync'] },
    responseTimeoutMs: { type: 'integer' },
    allowedRefs: { type: ['array', 'null'], items: { type: 'string' } },
    allowDebug: { type: 'boolean' },
    notifyProvider: { type: ['string', 'null'], enum: [...CHAT_PROVIDERS, null] },
    notifyTeamId: nullableString,
    notifyChannelId: nullableString,
    notifyOn: { type: 'string', enum: NOTIFY_ON },
    cronExpression: nullableString,
    cronTimezone: nullableString,
    cronEnabled: { type: ['boolean', 'null'] },
    cronMissedPolicy: { type: ['string', 'null'], enum: [...CRON_MISSED_POLICIES, null] },
    cronOverlapPolicy: { type: ['string', 'null'], enum: [...CRON_OVERLAP_POLICIES, null] },
    params: { type: ['object', 'null'], additionalProperties: true },
    ref: nullableString,
    chatTeamId: nullableString,
    chatChannelId: nullableString,
    chatKeyword: nullableString,
    chatAllowedUserIds: { type: ['array', 'null'], items: { type: 'string' } },
    createdAt: timestamp,
    updatedAt: timestamp,
    nextRunAt: { ...nullableTimestamp, description: 'cron: the next occurrence (UTC); null when not scheduled' },
    nextRuns: {
      type: 'array',
      description: 'cron: the next few occurrences, in UTC and in the local time of cronTimezone',
      items: {
        type: 'object',
        required: ['at', 'localTime'],
        properties: { at: timestamp, localTime: { type: 'string' } },
      },
    },
    lastOccurrences: { type: 'array', items: OccurrenceSchema, description: 'cron: the newest records, newest first' },
  },
} as const);

const triggerParams = idParams('orgId', 'triggerId');

/** The most triggers one page of the list holds. */
export const TRIGGERS_MAX_LIMIT = 500;
/** The most trigger ids one read of the list names (`?id=…&id=…`): a page of jobs or API tokens. */
export const TRIGGERS_MAX_IDS = 200;

const triggerPage = countedPageResponse(TriggerSchema, 'triggers');

/** A trigger's version, its `updatedAt` (http/if-match.ts). */
const etagOf = (trigger: { updatedAt: string }) => entityTag(trigger.updatedAt);
/** A trigger as one answer, with its `ETag`. */
const TriggerAnswer = { ...TriggerSchema, headers: etagHeader('the trigger', 'updatedAt') };

interface TriggerListQuery {
  type?: TriggerType;
  q?: string;
  id?: string[];
  limit?: number;
  cursor?: string;
}
type TriggerParams = { orgId: string; triggerId: string };

export async function triggerRoutes(app: FastifyInstance): Promise<void> {
  const { triggers } = app.ctx;

  app.get<{ Params: { orgId: string }; Querystring: TriggerListQuery }>(
    '/orgs/:orgId/triggers',
    {
      schema: {
        operationId: 'listTriggers',
        summary:
          "List the organization's triggers, oldest first: those of a type, whose name holds a text, of a list of ids; in pages with `limit`",
        tags: ['dashboard'],
        params: orgParams,
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: {
            type: { type: 'string', enum: TRIGGER_TYPES, description: 'Only the triggers of this type' },
            q: {
              type: 'string',
              minLength: 1,
              maxLength: MAX_NAME_LENGTH,
              description: 'Only the triggers whose name holds this text, in any case',
              examples: ['nightly'],
            },
            id: {
              type: 'array',
              items: uuid,
              minItems: 1,
              maxItems: TRIGGERS_MAX_IDS,
              description: `Only the triggers of these ids (the parameter once for each, up to ${TRIGGERS_MAX_IDS}): the names of those a page shows`,
            },
            limit: {
              type: 'integer',
              minimum: 1,
              maximum: TRIGGERS_MAX_LIMIT,
              description: `At most this many triggers, the next page's cursor in ${NEXT_CURSOR_HEADER} when more match; without it, every trigger that matches`,
            },
            cursor: cursorQueryProperty,
          },
        },
        response: { 200: triggerPage, ...errorResponses(401, 404, 422) },
      },
    },
    async (request, reply) => {
      const actor = await requireOrgRole(request, request.params.orgId);
      const { type, q, id, limit, cursor } = request.query;
      const page = await triggers.list(actor, {
        ...(type === undefined ? {} : { type }),
        ...(q === undefined ? {} : { text: q }),
        ...(id === undefined ? {} : { ids: [...new Set(id.map((one) => one.toLowerCase()))] }),
        ...(cursor === undefined ? {} : { after: parsePositionCursor(cursor) }),
        ...(limit === undefined ? {} : { limit }),
      });
      void reply.header(TOTAL_COUNT_HEADER, String(page.matching));
      if (page.next !== null) void reply.header(NEXT_CURSOR_HEADER, positionCursor(page.next));
      return page.triggers;
    },
  );

  app.post<{ Params: { orgId: string }; Body: TriggerInput }>(
    '/orgs/:orgId/triggers',
    {
      config: { action: 'triggers.edit' },
      schema: {
        operationId: 'createTrigger',
        summary: 'Create a trigger (webhook, cron, slack or discord)',
        tags: ['dashboard'],
        params: orgParams,
        querystring: noQuery,
        body: {
          type: 'object',
          additionalProperties: false,
          required: ['name', 'scopeType'],
          properties: configProperties,
          examples: [createTriggerBodyExample],
        },
        response: { 201: TriggerAnswer, ...errorResponses(401, 403, 404, 409, 422) },
      },
    },
    async (request, reply) => {
      const actor = await requireOrgRole(request, request.params.orgId);
      const created = await triggers.create(actor, request.body);
      return reply.code(201).header('etag', etagOf(created)).send(created);
    },
  );

  app.get<{ Params: TriggerParams }>(
    '/orgs/:orgId/triggers/:triggerId',
    {
      schema: {
        operationId: 'getTrigger',
        summary: 'Read a trigger',
        tags: ['dashboard'],
        params: triggerParams,
        querystring: noQuery,
        response: { 200: TriggerAnswer, ...errorResponses(401, 404, 422) },
      },
    },
    async (request, reply) => {
      const trigger = await triggers.get(await requireOrgRole(request, request.params.orgId), request.params.triggerId);
      return reply.header('etag', etagOf(trigger)).send(trigger);
    },
  );

  app.get<{ Params: TriggerParams; Querystring: { limit: number; cursor?: string } }>(
    '/orgs/:orgId/triggers/:triggerId/occurrences',
    {
      schema: {
        operationId: 'listTriggerOccurrences',
        summary:
          "A cron trigger's occurrences, newest first: the job each made or why it was skipped; next page cursor in the x-next-cursor header",
        tags: ['dashboard'],
        params: triggerParams,
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: {
            limit: { type: 'integer', minimum: 1, maximum: OCCURRENCES_MAX_LIMIT, default: 50 },
            cursor: cursorQueryProperty,
          },
        },
        response: { 200: pageResponse(OccurrenceSchema, 'occurrences'), ...errorResponses(401, 404, 422) },
      },
    },
    async (request, reply) => {
      const actor = await requireOrgRole(request, request.params.orgId);
      const { limit, cursor } = request.query;
      const before = parseCursor(cursor);
      const rows = await triggers.occurrences(actor, request.params.triggerId, {
        limit: limit + 1,
        // A cursor is an instant (ms); one past the last storable time selects what that time does
        // (no occurrence is in its last second), where beyond the year 275760 no Date holds it and
        // past 9999 neither database compares it (a 500, or PostgreSQL's 422 on `body`).
        before: before === undefined ? undefined : isoAt(Math.min(before, LAST_STORABLE_MS)),
      });
      return sendPage(reply, rows, limit, (o) => Date.parse(o.scheduledAt)).map(occurrenceView);
    },
  );

  app.patch<{ Params: TriggerParams; Body: TriggerInput }>(
    '/orgs/:orgId/triggers/:triggerId',
    {
      config: { action: 'triggers.edit', documented: { headers: ifMatchHeader('trigger') } },
      schema: {
        operationId: 'updateTrigger',
        summary: 'Change any subset of a trigger; the result is validated as a whole',
        tags: ['dashboard'],
        params: triggerParams,
        querystring: noQuery,
        body: {
          type: 'object',
          additionalProperties: false,
          properties: configProperties,
          examples: [{ cronExpression: '30 2 * * 1-5', cronEnabled: false }],
        },
        response: { 200: TriggerAnswer, ...errorResponses(401, 403, 404, 409, 412, 422) },
      },
    },
    async (request, reply) => {
      const actor = await requireOrgRole(request, request.params.orgId);
      const ifVersion = ifMatchVersion(request.headers['if-match'], 'trigger');
      const updated = await triggers.update(actor, request.params.triggerId, request.body, ifVersion);
      return reply.header('etag', etagOf(updated)).send(updated);
    },
  );

  app.delete<{ Params: TriggerParams }>(
    '/orgs/:orgId/triggers/:triggerId',
    {
      config: { action: 'triggers.delete' },
      schema: {
        operationId: 'deleteTrigger',
        summary: 'Delete a trigger (owner, operator); answers it as it was; it is never found again',
        tags: ['dashboard'],
        params: triggerParams,
        querystring: noQuery,
        response: { 200: TriggerSchema, ...errorResponses(401, 403, 404, 422) },
      },
    },
    async (request) => triggers.remove(await requireOrgRole(request, request.params.orgId), request.params.triggerId),
  );
}

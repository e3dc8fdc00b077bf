import type { FastifyInstance } from 'fastify';
import { CHAT_PROVIDERS, NOTIFY_ON, TRIGGER_TYPES, type Trigger } from '../../../domain/model/triggers.js';
import { userAction } from '../../../domain/audit-log.js';
import { MAX_NAME_LENGTH } from '../../../domain/names.js';
import { MAX_CRON_EXPRESSION_LENGTH } from '../../../domain/triggers-cron.js';
import {
  changedFields,
  CONFIG_FIELDS,
  checkChatKeywordClash,
  checkTriggerAgent,
  MAX_ALLOWED_REFS,
  MAX_CHAT_KEYWORD_LENGTH,
  MAX_REF_LENGTH,
  MAX_WORKFLOW_NAME_LENGTH,
  resolveTriggerConfig,
  RESPONSE_TIMEOUT_MS,
  WORKFLOW_NAME_PATTERN,
  type TriggerConfig,
  type TriggerInput,
} from '../../../domain/triggers.js';
import { notFound } from '../../../errors.js';
import { isoNow } from '../../../util/clock.js';
import { newId } from '../../../util/ids.js';
import { requireOrgRole } from '../../auth/session.js';
import { errorResponses, idParams, orgParams, timestamp, uuid } from '../../schemas/common.js';
import { noQuery } from '../../schemas/management.js';

/**
 * Triggers of an organization. Any member lists, reads, creates and changes them (members run
 * triggers too); deleting one is for owners, as deleting an app is in the spec.
 */

const chatId = { type: ['string', 'null'], minLength: 1, maxLength: 128, pattern: '^\\S+$' } as const;

const configProperties = {
  name: { type: 'string', minLength: 1, maxLength: MAX_NAME_LENGTH },
  type: { type: 'string', enum: TRIGGER_TYPES, description: 'omitted: webhook' },
  agentId: uuid,
  scopeType: { type: 'string', enum: ['workflow', 'agent'] },
  workflowName: {
    type: ['string', 'null'],
    minLength: 1,
    maxLength: MAX_WORKFLOW_NAME_LENGTH,
    pattern: WORKFLOW_NAME_PATTERN,
    description:
      'required with scopeType workflow, refused with scopeType agent; the workflow need not be reported yet',
  },
  responseMode: { type: 'string', enum: ['async', 'sync'] },
  responseTimeoutMs: {
    type: 'integer',
    minimum: RESPONSE_TIMEOUT_MS.min,
    maximum: RESPONSE_TIMEOUT_MS.max,
    description: `sync wait; default ${RESPONSE_TIMEOUT_MS.default}`,
  },
  allowedRefs: {
    type: ['array', 'null'],
    minItems: 1,
    maxItems: MAX_ALLOWED_REFS,
    uniqueItems: true,
    items: { type: 'string', minLength: 1, maxLength: MAX_REF_LENGTH },
    description: 'null or omitted: every ref is accepted',
  },
  allowDebug: { type: 'boolean' },
  notifyProvider: { type: ['string', 'null'], enum: [...CHAT_PROVIDERS, null] },
  notifyTeamId: chatId,
  notifyChannelId: chatId,
  notifyOn: { type: 'string', enum: NOTIFY_ON, description: 'default: always with a provider, none without' },
  cronExpression: { type: ['string', 'null'], minLength: 1, maxLength: MAX_CRON_EXPRESSION_LENGTH },
  cronTimezone: { type: ['string', 'null'], minLength: 1, maxLength: 64, description: 'IANA zone; default UTC' },
  cronEnabled: { type: ['boolean', 'null'], description: 'default true' },
  chatTeamId: chatId,
  chatChannelId: chatId,
  chatKeyword: { type: ['string', 'null'], minLength: 1, maxLength: MAX_CHAT_KEYWORD_LENGTH, pattern: '^\\S+$' },
} as const;

const nullableString = { type: ['string', 'null'] } as const;

export const TriggerSchema = {
  type: 'object',
  required: ['id', ...CONFIG_FIELDS, 'createdAt', 'updatedAt'],
  properties: {
    id: uuid,
    name: { type: 'string' },
    type: { type: 'string', enum: TRIGGER_TYPES },
    agentId: uuid,
    scopeType: { type: 'string', enum: ['workflow', 'agent'] },
    workflowName: nullableString,
    responseMode: { type: 'string', enum: ['async', 'sync'] },
    responseTimeoutMs: { type: 'integer' },
    allowedRefs: { type: ['array', 'null'], items: { type: 'string' } },
    allowDebug: { type: 'boolean' },
    notifyProvider: nullableString,
    notifyTeamId: nullableString,
    notifyChannelId: nullableString,
    notifyOn: { type: 'string', enum: NOTIFY_ON },
    cronExpression: nullableString,
    cronTimezone: nullableString,
    cronEnabled: { type: ['boolean', 'null'] },
    chatTeamId: nullableString,
    chatChannelId: nullableString,
    chatKeyword: nullableString,
    createdAt: timestamp,
    updatedAt: timestamp,
  },
} as const;

const triggerParams = idParams('orgId', 'triggerId');
type TriggerParams = { orgId: string; triggerId: string };

export async function triggerRoutes(app: FastifyInstance): Promise<void> {
  const { repos, audit, clock } = app.ctx;

  /** The agent must be an active agent of the organization; chat keywords must not clash. */
  async function checkConfig(orgId: string, config: TriggerConfig, selfId: string | null, agentChanged: boolean) {
    if (agentChanged) checkTriggerAgent(config.agentId, await repos.agents.findInOrg(orgId, config.agentId));
    if (config.chatKeyword !== null) checkChatKeywordClash(config, await repos.triggers.listByOrg(orgId), selfId);
  }

  app.get<{ Params: { orgId: string } }>(
    '/orgs/:orgId/triggers',
    {
      schema: {
        summary: "List the organization's triggers, oldest first",
        tags: ['dashboard'],
        params: orgParams,
        querystring: noQuery,
        response: { 200: { type: 'array', items: TriggerSchema }, ...errorResponses(401, 404, 422) },
      },
    },
    async (request) => {
      const { orgId } = await requireOrgRole(request, request.params.orgId);
      return repos.triggers.listByOrg(orgId);
    },
  );

  app.post<{ Params: { orgId: string }; Body: TriggerInput }>(
    '/orgs/:orgId/triggers',
    {
      schema: {
        summary: 'Create a trigger (webhook, cron, slack or discord)',
        tags: ['dashboard'],
        params: orgParams,
        querystring: noQuery,
        body: {
          type: 'object',
          additionalProperties: false,
          required: ['name', 'agentId', 'scopeType', 'responseMode'],
          properties: configProperties,
        },
        response: { 201: TriggerSchema, ...errorResponses(401, 404, 409, 422) },
      },
    },
    async (request, reply) => {
      const { orgId, userId } = await requireOrgRole(request, request.params.orgId);
      const config = resolveTriggerConfig(request.body, null);
      await checkConfig(orgId, config, null, true);
      const now = isoNow(clock);
      const trigger: Trigger = { id: newId(), orgId, ...config, createdBy: userId, createdAt: now, updatedAt: now };
      await repos.triggers.insert(trigger);
      await audit.record(
        userAction({ orgId, userId }, 'trigger.create', 'trigger', trigger.id, {
          name: trigger.name,
          type: trigger.type,
          agentId: trigger.agentId,
          scopeType: trigger.scopeType,
          workflowName: trigger.workflowName,
        }),
      );
      return reply.code(201).send(trigger);
    },
  );

  app.get<{ Params: TriggerParams }>(
    '/orgs/:orgId/triggers/:triggerId',
    {
      schema: {
        summary: 'Read a trigger',
        tags: ['dashboard'],
        params: triggerParams,
        querystring: noQuery,
        response: { 200: TriggerSchema, ...errorResponses(401, 404, 422) },
      },
    },
    async (request) => {
      const { orgId } = await requireOrgRole(request, request.params.orgId);
      const trigger = await repos.triggers.findInOrg(orgId, request.params.triggerId);
      if (!trigger) throw notFound('Trigger');
      return trigger;
    },
  );

  app.patch<{ Params: TriggerParams; Body: TriggerInput }>(
    '/orgs/:orgId/triggers/:triggerId',
    {
      schema: {
        summary: 'Change any subset of a trigger; the result is validated as a whole',
        tags: ['dashboard'],
        params: triggerParams,
        querystring: noQuery,
        body: { type: 'object', additionalProperties: false, properties: configProperties },
        response: { 200: TriggerSchema, ...errorResponses(401, 404, 409, 422) },
      },
    },
    async (request) => {
      const { orgId, userId } = await requireOrgRole(request, request.params.orgId);
      const current = await repos.triggers.findInOrg(orgId, request.params.triggerId);
      if (!current) throw notFound('Trigger');
      const config = resolveTriggerConfig(request.body, current);
      const changed = changedFields(current, config);
      if (changed.length === 0) return current;
      // A trigger whose agent was revoked can still be edited; pointing it at an agent is checked.
      await checkConfig(orgId, config, current.id, request.body.agentId !== undefined);
      const updated: Trigger = { ...current, ...config, updatedAt: isoNow(clock) };
      await repos.triggers.update(updated);
      await audit.record(
        userAction({ orgId, userId }, 'trigger.update', 'trigger', updated.id, { name: updated.name, changed }),
      );
      return updated;
    },
  );

  app.delete<{ Params: TriggerParams }>(
    '/orgs/:orgId/triggers/:triggerId',
    {
      schema: {
        summary: 'Delete a trigger (owner); answers it as it was; it is never found again',
        tags: ['dashboard'],
        params: triggerParams,
        querystring: noQuery,
        response: { 200: TriggerSchema, ...errorResponses(401, 403, 404, 422) },
      },
    },
    async (request) => {
      const { orgId, userId } = await requireOrgRole(request, request.params.orgId, 'owner');
      const trigger = await repos.triggers.findInOrg(orgId, request.params.triggerId);
      if (!trigger || !(await repos.triggers.softDelete(orgId, trigger.id, isoNow(clock)))) throw notFound('Trigger');
      const metadata = { name: trigger.name, type: trigger.type };
      await audit.record(userAction({ orgId, userId }, 'trigger.delete', 'trigger', trigger.id, metadata));
      return trigger;
    },
  );
}

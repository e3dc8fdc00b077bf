import type { FastifyInstance } from 'fastify';
import { editAgent, relabelMatching } from '../../../domain/agents/agent-edits.js';
import { selectorFrom, triggerSelectorFrom } from '../../../domain/agents/agent-labels.js';
import { listAgents } from '../../../domain/agents/agent-list.js';
import { AGENT_STATUSES, type AgentStatus } from '../../../domain/model/agents.js';
import { MAX_NAME_LENGTH } from '../../../domain/names.js';
import { invalid, notFound } from '../../../errors.js';
import { isoNow } from '../../../util/clock.js';
import { entityTag, etagHeader, ifMatchHeader, ifMatchVersion } from '../../if-match.js';
import { requireOrgRole } from '../../auth/session.js';
import { errorResponses, idParams, orgParams, selectorSchema, uuid } from '../../schemas/common.js';
import {
  AgentSchema,
  labelsSchema,
  noQuery,
  RelabelledSchema,
  SelectorMatchesSchema,
} from '../../schemas/management.js';
import { selectorMatches } from '../../../domain/fleet/selector-matches.js';
import { MAX_LABELS } from '@drover/shared';
import { MAX_WORKFLOW_NAME_LENGTH } from '../../../domain/triggers/triggers.js';
import { toManagedWorkflow } from './workflows.js';
import {
  cursorQueryProperty,
  NEXT_CURSOR_HEADER,
  countedPageResponse,
  parseCursor,
  TOTAL_COUNT_HEADER,
} from '../../pagination.js';

const agentParams = idParams('orgId', 'agentId');
type AgentParams = { orgId: string; agentId: string };

/** The most agents one page of the list holds. */
export const AGENTS_MAX_LIMIT = 500;
/** The most agent ids one read of the list names (`?id=…&id=…`): a page of jobs or audit entries. */
export const AGENTS_MAX_IDS = 200;

const agentPage = countedPageResponse(AgentSchema, 'agents');
/** An agent as one answer, with its revision as `ETag` (http/if-match.ts). */
const AgentAnswer = { ...AgentSchema, headers: etagHeader('the agent', 'revision') };

interface AgentListQuery {
  selector?: string;
  status?: AgentStatus;
  q?: string;
  id?: string[];
  limit?: number;
  cursor?: string;
}

/**
 * Agents of an organization: members list (by label selector too), read, rename and label them;
 * revoking (DELETE) is for owners. Responses carry the agent view only (AgentSchema drops publicKey).
 */
export async function agentManagementRoutes(app: FastifyInstance): Promise<void> {
  app.get<{ Params: { orgId: string }; Querystring: AgentListQuery }>(
    '/orgs/:orgId/agents',
    {
      schema: {
        operationId: 'listAgents',
        summary:
          'List the agents of an organization, most recently registered first: those a label selector, a status, a text and a list of ids match; in pages with `limit`',
        tags: ['dashboard'],
        params: orgParams,
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: {
            selector: selectorSchema('A label selector (docs/fleets.md): only the agents whose labels it matches', {
              examples: ['site in (berlin,munich),role=gateway'],
            }),
            status: { type: 'string', enum: AGENT_STATUSES, description: 'Only the agents with this status' },
            q: {
              type: 'string',
              minLength: 1,
              maxLength: MAX_NAME_LENGTH,
              description: 'Only the agents whose name or hostname holds this text, in any case',
              examples: ['lab'],
            },
            id: {
              type: 'array',
              items: uuid,
              minItems: 1,
              maxItems: AGENTS_MAX_IDS,
              description: `Only the agents of these ids (the parameter once for each, up to ${AGENTS_MAX_IDS}): the names of those a page shows`,
            },
            limit: {
              type: 'integer',
              minimum: 1,
              maximum: AGENTS_MAX_LIMIT,
              description: `At most this many agents, the next page's cursor in ${NEXT_CURSOR_HEADER} when more match; without it, every agent that matches`,
            },
            cursor: cursorQueryProperty,
          },
        },
        response: {
          200: agentPage,
          ...errorResponses(401, 404, 422),
        },
      },
    },
    async (request, reply) => {
      const { orgId } = await requireOrgRole(request, request.params.orgId);
      const { selector, status, q, id, limit, cursor } = request.query;
      const page = await listAgents(app.ctx.repos.agents, orgId, {
        ...(selector === undefined ? {} : { selector: selectorFrom(selector, 'querystring.selector') }),
        ...(status === undefined ? {} : { status }),
        ...(q === undefined ? {} : { text: q }),
        ...(id === undefined ? {} : { ids: [...new Set(id.map((one) => one.toLowerCase()))] }),
        ...(cursor === undefined ? {} : { before: parseCursor(cursor) }),
        ...(limit === undefined ? {} : { limit }),
      });
      void reply.header(TOTAL_COUNT_HEADER, String(page.matching));
      if (page.next !== null) void reply.header(NEXT_CURSOR_HEADER, String(page.next));
      return page.agents;
    },
  );

  app.post<{
    Params: { orgId: string };
    Body: { selector: string; set?: Record<string, string>; remove?: string[]; dryRun?: boolean };
  }>(
    '/orgs/:orgId/agents/labels',
    {
      config: { action: 'agents.edit' },
      schema: {
        operationId: 'relabelAgents',
        summary:
          "Change the operators' labels of every agent a label selector matches: set some, remove some (docs/fleets.md); dryRun: what would change",
        tags: ['dashboard'],
        params: orgParams,
        querystring: noQuery,
        body: {
          type: 'object',
          additionalProperties: false,
          required: ['selector'],
          properties: {
            selector: selectorSchema(
              'A label selector (docs/fleets.md): the agents whose labels change (revoked ones left out)',
              { nonEmpty: true },
            ),
            set: labelsSchema("The labels to set on each agent, over the operators' labels it has"),
            remove: {
              type: 'array',
              maxItems: MAX_LABELS,
              uniqueItems: true,
              items: { type: 'string', maxLength: 63 },
              description: "The keys of the operators' labels to remove from each agent",
            },
            dryRun: { type: 'boolean', description: 'true: answer what would change, and change nothing' },
          },
          examples: [
            { selector: 'site=berlin,role=gateway', set: { ring: 'canary' } },
            { selector: 'ring', remove: ['ring'] },
          ],
        },
        response: { 200: RelabelledSchema, ...errorResponses(401, 403, 404, 409, 422) },
      },
    },
    async (request) => {
      const actor = await requireOrgRole(request, request.params.orgId);
      const { selector, set = {}, remove = [], dryRun = false } = request.body;
      const { repos, audit, deviceGroups } = app.ctx;
      const requirements = selectorFrom(selector, 'body.selector');
      if (requirements.length === 0) {
        throw invalid(
          'body.selector',
          'must select by at least one label (to reach every agent, select one they all have, such as os)',
        );
      }
      const result = await relabelMatching(
        { agents: repos.agents, audit, deviceGroups },
        actor,
        { source: selector, requirements },
        { set, remove },
        dryRun,
      );
      return { matching: result.matching, changed: result.agents.length, dryRun, agents: result.agents };
    },
  );

  app.get<{ Params: { orgId: string }; Querystring: { selector: string; workflowName?: string } }>(
    '/orgs/:orgId/selector-matches',
    {
      schema: {
        operationId: 'selectorMatches',
        summary:
          'What a trigger on a label selector would run on if called now: the agents it matches, those lacking the workflow, the workflows they report',
        tags: ['dashboard'],
        params: orgParams,
        querystring: {
          type: 'object',
          additionalProperties: false,
          required: ['selector'],
          properties: {
            selector: selectorSchema('A label selector (docs/fleets.md)', {
              nonEmpty: true,
              examples: ['role=gateway'],
            }),
            workflowName: {
              type: 'string',
              minLength: 1,
              maxLength: MAX_WORKFLOW_NAME_LENGTH,
              description: 'The workflow a run would start: which matching agents lack it, and its versions',
              examples: ['rotate'],
            },
          },
        },
        response: { 200: SelectorMatchesSchema, ...errorResponses(401, 404, 422) },
      },
    },
    async (request) => {
      const { orgId } = await requireOrgRole(request, request.params.orgId);
      const { selector, workflowName } = request.query;
      const matches = await selectorMatches(
        app.ctx.repos,
        orgId,
        triggerSelectorFrom(selector, 'querystring.selector'),
        workflowName,
      );
      return { ...matches, versions: matches.versions.map(toManagedWorkflow) };
    },
  );

  app.get<{ Params: AgentParams }>(
    '/orgs/:orgId/agents/:agentId',
    {
      schema: {
        operationId: 'getAgent',
        summary: 'An agent of the organization',
        tags: ['dashboard'],
        params: agentParams,
        querystring: noQuery,
        response: { 200: AgentAnswer, ...errorResponses(401, 404, 422) },
      },
    },
    async (request, reply) => {
      const { orgId } = await requireOrgRole(request, request.params.orgId);
      const agent = await app.ctx.repos.agents.findInOrg(orgId, request.params.agentId);
      if (!agent) throw notFound('Agent');
      return reply.header('etag', entityTag(agent.revision)).send(agent);
    },
  );

  app.patch<{ Params: AgentParams; Body: { name?: string; labels?: Record<string, string> } }>(
    '/orgs/:orgId/agents/:agentId',
    {
      config: { action: 'agents.edit', documented: { headers: ifMatchHeader('agent') } },
      schema: {
        operationId: 'updateAgent',
        summary: "Rename an agent, or replace the operators' labels of it (docs/fleets.md)",
        tags: ['dashboard'],
        params: agentParams,
        querystring: noQuery,
        body: {
          type: 'object',
          additionalProperties: false,
          minProperties: 1,
          properties: {
            name: { type: 'string', minLength: 1, maxLength: MAX_NAME_LENGTH },
            labels: labelsSchema("The operators' labels, replacing those set before as a whole ({} removes them)"),
          },
          examples: [{ name: 'edge-lab-01' }, { labels: { site: 'munich', role: 'gateway' } }],
        },
        response: { 200: AgentAnswer, ...errorResponses(401, 403, 404, 409, 412, 422) },
      },
    },
    async (request, reply) => {
      const actor = await requireOrgRole(request, request.params.orgId);
      const ifVersion = ifMatchVersion(request.headers['if-match'], 'agent');
      const { repos, audit, deviceGroups } = app.ctx;
      const deps = { agents: repos.agents, audit, deviceGroups };
      const agent = await editAgent(deps, actor, request.params.agentId, request.body, ifVersion);
      return reply.header('etag', entityTag(agent.revision)).send(agent);
    },
  );

  app.delete<{ Params: AgentParams }>(
    '/orgs/:orgId/agents/:agentId',
    {
      config: { action: 'agents.revoke' },
      schema: {
        operationId: 'revokeAgent',
        summary:
          'Revoke an agent (owner, operator): its signatures are refused and its stream closed; returns the revoked agent',
        tags: ['dashboard'],
        params: agentParams,
        querystring: noQuery,
        response: { 200: AgentSchema, ...errorResponses(401, 403, 404, 422) },
      },
    },
    async (request) => {
      const { orgId, userId } = await requireOrgRole(request, request.params.orgId);
      const before = await app.ctx.repos.agents.findInOrg(orgId, request.params.agentId);
      if (!before) throw notFound('Agent');
      if (before.status === 'revoked') return before; // idempotent: nothing more to do or record
      const revoked = await app.ctx.repos.agents.revoke(orgId, before.id, isoNow(app.ctx.clock));
      if (!revoked) throw notFound('Agent');
      const { agent } = revoked;
      // Revoked by another call meanwhile (the same click twice, two coordinators): that one records it.
      if (!revoked.first) return agent;
      await app.ctx.audit.record({
        orgId,
        actorType: 'user',
        actorId: userId,
        action: 'agent.revoke',
        targetType: 'agent',
        targetId: agent.id,
        metadata: { name: agent.name, hostname: agent.hostname, previousStatus: before.status },
      });
      for (const err of app.ctx.agentEvents.revoked(agent)) {
        request.log.error({ err, agentId: agent.id }, 'agent revocation listener failed');
      }
      return agent;
    },
  );
}

import type { FastifyInstance } from 'fastify';
import { agentEventsOf } from '../../../domain/agents/agent-events.js';
import { cleanName, MAX_NAME_LENGTH } from '../../../domain/names.js';
import { notFound } from '../../../errors.js';
import { isoNow } from '../../../util/clock.js';
import { requireOrgRole } from '../../auth/session.js';
import { errorResponses, idParams, orgParams } from '../../schemas/common.js';
import { AgentSchema, noQuery } from '../../schemas/management.js';
import { listOf } from '../../schemas/examples.js';

const agentParams = idParams('orgId', 'agentId');
type AgentParams = { orgId: string; agentId: string };

/**
 * Agents of an organization: members list, read and rename them; revoking (DELETE) is for owners.
 * Responses carry the spec's agent fields only (AgentSchema drops publicKey and the rest).
 */
export async function agentManagementRoutes(app: FastifyInstance): Promise<void> {
  app.get<{ Params: { orgId: string } }>(
    '/orgs/:orgId/agents',
    {
      schema: {
        operationId: 'listAgents',
        summary: 'List the agents of an organization, most recently registered first',
        tags: ['dashboard'],
        params: orgParams,
        querystring: noQuery,
        response: { 200: listOf(AgentSchema), ...errorResponses(401, 404, 422) },
      },
    },
    async (request) => {
      const { orgId } = await requireOrgRole(request, request.params.orgId);
      return app.ctx.repos.agents.listByOrg(orgId);
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
        response: { 200: AgentSchema, ...errorResponses(401, 404, 422) },
      },
    },
    async (request) => {
      const { orgId } = await requireOrgRole(request, request.params.orgId);
      const agent = await app.ctx.repos.agents.findInOrg(orgId, request.params.agentId);
      if (!agent) throw notFound('Agent');
      return agent;
    },
  );

  app.patch<{ Params: AgentParams; Body: { name: string } }>(
    '/orgs/:orgId/agents/:agentId',
    {
      schema: {
        operationId: 'renameAgent',
        summary: 'Rename an agent',
        tags: ['dashboard'],
        params: agentParams,
        querystring: noQuery,
        body: {
          type: 'object',
          additionalProperties: false,
          required: ['name'],
          properties: { name: { type: 'string', minLength: 1, maxLength: MAX_NAME_LENGTH } },
          examples: [{ name: 'edge-lab-01' }],
        },
        response: { 200: AgentSchema, ...errorResponses(401, 404, 422) },
      },
    },
    async (request) => {
      const { orgId, userId } = await requireOrgRole(request, request.params.orgId);
      const name = cleanName('body.name', request.body.name);
      const before = await app.ctx.repos.agents.findInOrg(orgId, request.params.agentId);
      if (!before) throw notFound('Agent');
      const agent = await app.ctx.repos.agents.rename(orgId, before.id, name);
      if (!agent) throw notFound('Agent');
      if (before.name !== agent.name) {
        await app.ctx.audit.record({
          orgId,
          actorType: 'user',
          actorId: userId,
          action: 'agent.rename',
          targetType: 'agent',
          targetId: agent.id,
          metadata: { from: before.name, to: agent.name },
        });
      }
      return agent;
    },
  );

  app.delete<{ Params: AgentParams }>(
    '/orgs/:orgId/agents/:agentId',
    {
      schema: {
        operationId: 'revokeAgent',
        summary: 'Revoke an agent (owner): its signatures are refused and its stream closed; returns the revoked agent',
        tags: ['dashboard'],
        params: agentParams,
        querystring: noQuery,
        response: { 200: AgentSchema, ...errorResponses(401, 403, 404, 422) },
      },
    },
    async (request) => {
      const { orgId, userId } = await requireOrgRole(request, request.params.orgId, 'owner');
      const before = await app.ctx.repos.agents.findInOrg(orgId, request.params.agentId);
      if (!before) throw notFound('Agent');
      if (before.status === 'revoked') return before; // idempotent: nothing more to do or record
      const agent = await app.ctx.repos.agents.revoke(orgId, before.id, isoNow(app.ctx.clock));
      if (!agent) throw notFound('Agent');
      await app.ctx.audit.record({
        orgId,
        actorType: 'user',
        actorId: userId,
        action: 'agent.revoke',
        targetType: 'agent',
        targetId: agent.id,
        metadata: { name: agent.name, hostname: agent.hostname, previousStatus: before.status },
      });
      for (const err of agentEventsOf(app.ctx).revoked(agent)) {
        request.log.error({ err, agentId: agent.id }, 'agent revocation listener failed');
      }
      return agent;
    },
  );
}

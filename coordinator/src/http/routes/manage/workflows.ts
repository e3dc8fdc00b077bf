import type { FastifyInstance } from 'fastify';
import type { Workflow } from '../../../domain/model/workflows.js';
import {
  MAX_WORKFLOW_RATE_LIMIT,
  updateWorkflowLimits,
  type WorkflowLimitsPatch,
} from '../../../domain/workflows/workflow-limits.js';
import { notFound } from '../../../errors.js';
import { isoNow } from '../../../util/clock.js';
import { requireOrgRole } from '../../auth/session.js';
import { errorResponses, idParams, orgParams, uuid } from '../../schemas/common.js';
import { ManagedWorkflowSchema, noQuery } from '../../schemas/management.js';
import { listOf } from '../../schemas/examples.js';

const workflowParams = idParams('orgId', 'workflowId');
type WorkflowParams = { orgId: string; workflowId: string };
/** The most agents one read of the workflows list names: 200 ids fit in a request line of 9 KB. */
const MAX_WORKFLOW_AGENTS = 200;
const limit = {
  type: ['integer', 'null'],
  minimum: 1,
  maximum: MAX_WORKFLOW_RATE_LIMIT,
  description: `1 to ${MAX_WORKFLOW_RATE_LIMIT}, or null for no limit`,
} as const;

/** The management representation of a workflow: the public fields plus its limits (never secrets or steps). */
export function toManagedWorkflow(w: Workflow) {
  return {
    id: w.id,
    agentId: w.agentId,
    name: w.name,
    description: w.description,
    version: w.version,
    paramsSchema: w.paramsSchema,
    rateLimitPerMinute: w.rateLimit.perMinute,
    rateLimitPerHour: w.rateLimit.perHour,
    rateLimitPerDay: w.rateLimit.perDay,
    createdAt: w.createdAt,
    updatedAt: w.updatedAt,
  };
}

/** Workflows of an organization: members read them; owners set their rate limits (a policy). */
export async function workflowManagementRoutes(app: FastifyInstance): Promise<void> {
  app.get<{ Params: { orgId: string }; Querystring: { agentId?: string[] } }>(
    '/orgs/:orgId/workflows',
    {
      schema: {
        operationId: 'listWorkflows',
        summary:
          'List the active workflows of an organization with their limits, ascending by name; those of some agents',
        tags: ['dashboard'],
        params: orgParams,
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: {
            agentId: {
              type: 'array',
              items: uuid,
              minItems: 1,
              maxItems: MAX_WORKFLOW_AGENTS,
              description: `Only the workflows of these agents (the parameter once for each, up to ${MAX_WORKFLOW_AGENTS}: a page of the agents list)`,
            },
          },
        },
        response: { 200: listOf(ManagedWorkflowSchema), ...errorResponses(401, 404, 422) },
      },
    },
    async (request) => {
      const { orgId } = await requireOrgRole(request, request.params.orgId);
      const { workflows } = app.ctx.repos;
      const agentIds = request.query.agentId?.map((id) => id.toLowerCase());
      const list =
        agentIds === undefined
          ? await workflows.listByOrg(orgId)
          : (await workflows.listActiveByAgents(agentIds)).filter((w) => w.orgId === orgId);
      return list.map(toManagedWorkflow);
    },
  );

  app.get<{ Params: WorkflowParams }>(
    '/orgs/:orgId/workflows/:workflowId',
    {
      schema: {
        operationId: 'getWorkflow',
        summary: 'An active workflow of the organization with its limits',
        tags: ['dashboard'],
        params: workflowParams,
        querystring: noQuery,
        response: { 200: ManagedWorkflowSchema, ...errorResponses(401, 404, 422) },
      },
    },
    async (request) => {
      const { orgId } = await requireOrgRole(request, request.params.orgId);
      const workflow = await app.ctx.repos.workflows.findInOrg(orgId, request.params.workflowId);
      if (!workflow || workflow.removedAt !== null) throw notFound('Workflow');
      return toManagedWorkflow(workflow);
    },
  );

  app.patch<{ Params: WorkflowParams; Body: WorkflowLimitsPatch }>(
    '/orgs/:orgId/workflows/:workflowId',
    {
      config: { action: 'workflows.limits' },
      schema: {
        operationId: 'updateWorkflowLimits',
        summary: "Set a workflow's rate limits (owner); keys left out keep their value, null removes a limit",
        tags: ['dashboard'],
        params: workflowParams,
        querystring: noQuery,
        body: {
          type: 'object',
          additionalProperties: false,
          minProperties: 1,
          examples: [{ rateLimitPerMinute: 10, rateLimitPerDay: 1000 }],
          properties: { rateLimitPerMinute: limit, rateLimitPerHour: limit, rateLimitPerDay: limit },
        },
        response: { 200: ManagedWorkflowSchema, ...errorResponses(401, 403, 404, 422) },
      },
    },
    async (request) => {
      const { orgId, userId } = await requireOrgRole(request, request.params.orgId);
      const { workflow, previous } = await updateWorkflowLimits(
        app.ctx.repos,
        orgId,
        request.params.workflowId,
        request.body,
        isoNow(app.ctx.clock),
      );
      await app.ctx.audit.record({
        orgId,
        actorType: 'user',
        actorId: userId,
        action: 'workflow.update_limits',
        targetType: 'workflow',
        targetId: workflow.id,
        metadata: { name: workflow.name, agentId: workflow.agentId, from: previous, to: workflow.rateLimit },
      });
      return toManagedWorkflow(workflow);
    },
  );
}

import type { FastifyInstance } from 'fastify';
import { PutWorkflowsRequest, PutWorkflowsResponse, type PublicWorkflow } from '@drover/shared';
import type { Workflow } from '../../../domain/model/workflows.js';
import { storableDefinitions, workflowDefinitionProblems } from '../../../domain/workflows/workflow-definitions.js';
import { validationFailed } from '../../../errors.js';
import { isoNow } from '../../../util/clock.js';
import { requireAgent } from '../../auth/agent-signature.js';
import { errorResponses } from '../../schemas/common.js';
import { noQuery } from './schemas.js';
import { withExample, workflowDefinitionExample, workflowExample } from '../../schemas/examples.js';
import { reconnectShedding } from './reconnect-shedding.js';
import { recordReport } from '../../../domain/agents/report-digests.js';

/** The public workflow shape: never secretsKeys, steps or limits. */
export const toPublicWorkflow = (w: Workflow): PublicWorkflow => ({
  id: w.id,
  agentId: w.agentId,
  name: w.name,
  description: w.description,
  version: w.version,
  paramsSchema: w.paramsSchema,
});

/** The largest workflow set an agent may report (its bytes as JSON). */
const WORKFLOW_SET_LIMIT_BYTES = 16 * 1024 * 1024;

/**
 * `PUT /v1/agent/workflows` (signed): the agent reports its complete set of workflow definitions
 * (secret values never included, only the names in `secretsKeys`). The set replaces the previous
 * one; a workflow missing from it is removed. Answers the active set, ascending by name.
 */
export async function agentWorkflowRoutes(app: FastifyInstance): Promise<void> {
  app.put<{ Body: PutWorkflowsRequest }>(
    '/agent/workflows',
    {
      // Up to 512 definitions of some kilobytes each: more than the API's body limit allows.
      bodyLimit: Math.max(app.ctx.config.bodyLimitBytes, WORKFLOW_SET_LIMIT_BYTES),
      // Sent before each stream open: refused, before its signature is checked, while the stream would be.
      onRequest: reconnectShedding(app.ctx.reconnects, app.ctx.metrics, false),
      schema: {
        operationId: 'reportAgentWorkflows',
        summary: "Replace the agent's set of workflow definitions",
        tags: ['agent'],
        body: withExample(PutWorkflowsRequest, { workflows: [workflowDefinitionExample] }),
        querystring: noQuery,
        response: {
          200: withExample(PutWorkflowsResponse, { workflows: [workflowExample] }),
          ...errorResponses(401, 413, 422, 503),
        },
      },
    },
    async (request) => {
      const agent = await requireAgent(request);
      const problems = workflowDefinitionProblems(request.body.workflows);
      if (problems.length > 0) throw validationFailed(problems);
      const { repos, clock } = app.ctx;
      const active = await repos.workflows.replaceForAgent(
        agent.orgId,
        agent.id,
        storableDefinitions(request.body.workflows),
        isoNow(clock),
      );
      await recordReport(repos.agents, agent, 'workflows', request.rawBody);
      request.log.info({ agentId: agent.id, workflows: active.length }, 'agent workflows replaced');
      return { workflows: active.map(toPublicWorkflow) };
    },
  );
}

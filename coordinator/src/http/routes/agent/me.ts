import type { FastifyInstance } from 'fastify';
import { AgentSelf } from '@drover/shared';
import { requireAgent } from '../../auth/agent-signature.js';
import { errorResponses } from '../../schemas/common.js';
import { noQuery } from './schemas.js';
import { agentSelfExample, withExample } from '../../schemas/examples.js';

/** `GET /v1/agent/me` (signed): a cheap self-check that the agent's key and clock are accepted. */
export async function agentSelfRoutes(app: FastifyInstance): Promise<void> {
  app.get(
    '/agent/me',
    {
      schema: {
        operationId: 'getAgentSelf',
        summary: 'The signing agent itself: proves its enrollment and signature work',
        tags: ['agent'],
        querystring: noQuery,
        response: { 200: withExample(AgentSelf, agentSelfExample), ...errorResponses(401, 422) },
      },
    },
    async (request): Promise<AgentSelf> => {
      const agent = await requireAgent(request);
      return { agentId: agent.id, orgId: agent.orgId, name: agent.name, status: agent.status };
    },
  );
}

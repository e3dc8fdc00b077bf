import type { FastifyInstance } from 'fastify';
import { PutAgentLabelsRequest, PutAgentLabelsResponse } from '@drover/shared';
import { reportLabels } from '../../../domain/agents/agent-labels.js';
import { requireAgent } from '../../auth/agent-signature.js';
import { errorResponses } from '../../schemas/common.js';
import { withExample } from '../../schemas/examples.js';
import { noQuery } from './schemas.js';
import { reconnectShedding } from './reconnect-shedding.js';
import { recordReport } from '../../../domain/agents/report-digests.js';

/**
 * `PUT /v1/agent/labels` (signed): the labels the agent reports of itself, sent when it connects
 * (docs/agent-protocol.md). They replace those it reported before; operators' labels stay.
 */
export async function agentLabelRoutes(app: FastifyInstance): Promise<void> {
  app.put<{ Body: PutAgentLabelsRequest }>(
    '/agent/labels',
    {
      // Sent before each stream open: refused, before its signature is checked, while the stream would be.
      onRequest: reconnectShedding(app.ctx.reconnects, app.ctx.metrics, false),
      schema: {
        operationId: 'reportAgentLabels',
        summary: 'Replace the labels the agent reports of itself',
        description:
          'Every label the agent reports, `os` and `arch` included (422 naming each one missing: an agent reports its ' +
          'own); keys and values as docs/agent.md, "Labels", says.',
        tags: ['agent'],
        body: withExample(PutAgentLabelsRequest, { labels: { os: 'linux', arch: 'arm64', site: 'berlin' } }),
        querystring: noQuery,
        response: {
          200: withExample(PutAgentLabelsResponse, {
            labels: { arch: 'arm64', os: 'linux', site: 'munich' },
            reportedLabels: { arch: 'arm64', os: 'linux', site: 'berlin' },
            operatorLabels: { site: 'munich' },
          }),
          ...errorResponses(401, 422, 503),
        },
      },
    },
    async (request): Promise<PutAgentLabelsResponse> => {
      const { repos, deviceGroups } = app.ctx;
      const reporter = await requireAgent(request);
      const agent = await reportLabels({ agents: repos.agents, deviceGroups }, reporter, request.body.labels);
      await recordReport(repos.agents, reporter, 'labels', request.rawBody);
      return { labels: agent.labels, reportedLabels: agent.reportedLabels, operatorLabels: agent.operatorLabels };
    },
  );
}

import type { ServerResponse } from 'node:http';
import type { FastifyInstance } from 'fastify';
import {
  AGENT_REPORTS_CHECKED,
  AGENT_REPORTS_HEADER,
  AGENT_REPORTS_QUERY_PATTERN,
  AGENT_VERSION_HEADER,
  AGENT_VERSION_HEADER_PATTERN,
} from '@drover/shared';
import { checkReportsClaim } from '../../../domain/agents/report-digests.js';
import { SSE_OPENING } from '../../../domain/agents/sse.js';
import { reconnectShedding } from './reconnect-shedding.js';
import { DEFAULT_AGENT_QUEUE_CAPACITY, type StreamSink } from '../../../domain/agents/stream-registry.js';
import { requireAgent } from '../../auth/agent-signature.js';
import { errorResponses } from '../../schemas/common.js';
import { EXAMPLE_IDS } from '../../schemas/examples.js';

/** The agent's queue capacity, which paces the jobs handed to it, and its reports claim. */
const StreamQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    capacity: {
      type: 'integer',
      minimum: 1,
      maximum: 1000,
      description: `jobs the agent's queue holds, the running one included (default ${DEFAULT_AGENT_QUEUE_CAPACITY})`,
    },
    reports: {
      type: 'string',
      pattern: AGENT_REPORTS_QUERY_PATTERN,
      description:
        'the SHA-256 (hex) of the bodies of its last accepted workflows and labels reports, joined by a dot: ' +
        'the agent claims the coordinator holds them instead of reporting both again (409 `reports_outdated` when it does not)',
    },
  },
} as const;

/** The agent's version (optional): kept as its `agentVersion`, so that it follows a self-update. */
const StreamHeaders = {
  type: 'object',
  properties: {
    [AGENT_VERSION_HEADER]: {
      type: 'string',
      pattern: AGENT_VERSION_HEADER_PATTERN,
      description: "the agent's version (1 to 64 visible ASCII characters), kept as its agentVersion",
    },
  },
} as const;

/** A stream this far behind (bytes the agent has not read) is cut; the agent reconnects and catches up. */
const MAX_BUFFERED_BYTES = 4 * 1024 * 1024;

function responseSink(raw: ServerResponse): StreamSink {
  return {
    write(chunk) {
      if (raw.destroyed || raw.writableEnded) return false;
      raw.write(chunk);
      if (raw.writableLength > MAX_BUFFERED_BYTES) {
        raw.destroy();
        return false;
      }
      return true;
    },
    end() {
      if (!raw.writableEnded && !raw.destroyed) raw.end();
    },
    onClose(listener) {
      raw.once('close', listener);
    },
  };
}

/**
 * `GET /v1/agent/stream` (signed): the server-sent event stream through which work reaches the
 * agent (docs/agent-protocol.md §6). The reply is hijacked: Fastify's serialization and hooks do
 * not apply to the open stream; errors before it opens (a bad signature) are ordinary answers.
 */
export async function agentStreamRoutes(app: FastifyInstance): Promise<void> {
  const registry = app.ctx.streams;
  app.get<{ Querystring: { capacity?: number; reports?: string }; Headers: { [AGENT_VERSION_HEADER]?: string } }>(
    '/agent/stream',
    {
      // A HEAD would run this handler and open a stream nobody reads.
      exposeHeadRoute: false,
      // Past the reconnect budget, shed before the signature is checked (docs/operations.md, "Reconnect storms").
      onRequest: reconnectShedding(app.ctx.reconnects, app.ctx.metrics, true),
      schema: {
        operationId: 'openAgentStream',
        summary: 'The event stream (text/event-stream) pushing job, deploy, cancel and ping events to the agent',
        tags: ['agent'],
        querystring: StreamQuery,
        headers: StreamHeaders,
        response: {
          200: {
            description: 'A text/event-stream of `job`, `deploy`, `cancel` and `ping` events',
            content: {
              'text/event-stream': {
                schema: { type: 'string' },
                example: `event: cancel\ndata: {"jobId":"${EXAMPLE_IDS.job}"}\n\nevent: ping\ndata: {"at":"2026-11-25T09:58:20.000Z"}\n\n`,
              },
            },
          },
          ...errorResponses(401, 409, 422, 503),
        },
      },
    },
    async (request, reply) => {
      const agent = await requireAgent(request);
      if (request.query.reports !== undefined) checkReportsClaim(agent, request.query.reports);
      reply.hijack();
      const raw = reply.raw;
      const headers: Record<string, string | number | string[]> = {};
      for (const [name, value] of Object.entries(reply.getHeaders())) if (value !== undefined) headers[name] = value;
      raw.writeHead(200, {
        ...headers,
        'content-type': 'text/event-stream',
        'cache-control': 'no-cache',
        'x-accel-buffering': 'no',
        // This coordinator checks a reports claim: the agent may send one at its next connect.
        [AGENT_REPORTS_HEADER]: AGENT_REPORTS_CHECKED,
      });
      raw.socket?.setNoDelay(true);
      raw.socket?.setKeepAlive(true, 30_000);
      // The SSE `retry` field: how long the agent is to spread its reconnect over when this stream drops.
      raw.write(`${SSE_OPENING}retry: ${app.ctx.reconnects.retryHintMs(registry.size + 1)}\n\n`);
      await registry.connect(
        { id: agent.id, orgId: agent.orgId },
        responseSink(raw),
        request.query.capacity,
        request.headers[AGENT_VERSION_HEADER],
        request.ip,
      );
    },
  );
}

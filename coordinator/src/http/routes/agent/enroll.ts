import type { FastifyInstance } from 'fastify';
import { EnrollRequest, EnrollResponse } from '@drover/shared';
import { errorResponses } from '../../schemas/common.js';
import { noQuery } from './schemas.js';
import { enrollAnswerExample, enrollBodyExample, withExample } from '../../schemas/examples.js';

/**
 * `POST /v1/agent/enroll` (docs/agent-protocol.md): spends a single-use enrollment token and registers the
 * agent's public key (domain/agents/agent-enrollment.ts). Not signed: the enrollment token is the credential.
 */
export async function agentEnrollRoutes(app: FastifyInstance): Promise<void> {
  app.post<{ Body: EnrollRequest }>(
    '/agent/enroll',
    {
      schema: {
        operationId: 'enrollAgent',
        summary: 'Enroll an agent with a single-use enrollment token and its Ed25519 public key',
        tags: ['agent'],
        security: [], // the enrollment token in the body is the credential
        querystring: noQuery,
        body: withExample(EnrollRequest, enrollBodyExample),
        response: { 201: withExample(EnrollResponse, enrollAnswerExample), ...errorResponses(401, 422, 429) },
      },
    },
    async (request, reply) => {
      const agent = await app.ctx.enrollment.enroll(request.body, request.ip);
      return reply
        .status(201)
        .send({ agentId: agent.id, orgId: agent.orgId, serverPublicKey: app.ctx.serverKey.publicKey });
    },
  );
}

import type { FastifyInstance } from 'fastify';
import { EnrollRequest, EnrollResponse, publicKeyFromBase64 } from '@drover/shared';
import { cleanName } from '../../../domain/names.js';
import { invalid, unauthorized } from '../../../errors.js';
import { isoNow } from '../../../util/clock.js';
import { newId } from '../../../util/ids.js';
import { hashBearerSecret } from '../../../util/secrets.js';
import { errorResponses } from '../../schemas/common.js';
import { noQuery } from './schemas.js';

const REFUSALS = {
  unknown: 'The enrollment token is not valid',
  used: 'The enrollment token has already been used',
  expired: 'The enrollment token has expired',
} as const;

/**
 * `POST /v1/agent/enroll` (CONTRACT §5): spends a single-use enrollment token and registers the
 * agent's public key. Not signed: the enrollment token is the credential.
 */
export async function agentEnrollRoutes(app: FastifyInstance): Promise<void> {
  app.post<{ Body: EnrollRequest }>(
    '/agent/enroll',
    {
      schema: {
        summary: 'Enroll an agent with a single-use enrollment token and its Ed25519 public key',
        tags: ['agent'],
        querystring: noQuery,
        body: EnrollRequest,
        response: { 201: EnrollResponse, ...errorResponses(401, 422) },
      },
    },
    async (request, reply) => {
      const { repos, clock, audit, serverKey } = app.ctx;
      const body = request.body;
      // Checked before the token is spent, so that a bad key does not burn the token.
      if (!publicKeyFromBase64(body.publicKey)) {
        throw invalid(
          'body.publicKey',
          'must be standard base64 of a raw 32-byte Ed25519 public key (a valid curve point)',
        );
      }
      // The display name: the one asked for, else the hostname (renamed later in the dashboard).
      const name =
        body.name === undefined ? cleanName('body.hostname', body.hostname) : cleanName('body.name', body.name);
      const outcome = await repos.agents.enroll(
        hashBearerSecret(body.enrollmentToken),
        {
          id: newId(),
          name,
          hostname: body.hostname,
          os: body.os,
          agentVersion: body.agentVersion,
          publicKey: body.publicKey,
        },
        isoNow(clock),
      );
      if (!outcome.ok) {
        request.log.info({ reason: outcome.reason }, 'enrollment refused');
        throw unauthorized(REFUSALS[outcome.reason]);
      }
      const agent = outcome.agent;
      await audit.record({
        orgId: agent.orgId,
        actorType: 'agent',
        actorId: agent.id,
        action: 'agent.enroll',
        targetType: 'agent',
        targetId: agent.id,
        metadata: { name: agent.name, hostname: agent.hostname, os: agent.os, agentVersion: agent.agentVersion },
      });
      return reply.status(201).send({ agentId: agent.id, orgId: agent.orgId, serverPublicKey: serverKey.publicKey });
    },
  );
}

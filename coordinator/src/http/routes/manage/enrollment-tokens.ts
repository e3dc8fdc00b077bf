import type { FastifyInstance } from 'fastify';
import {
  ENROLLMENT_TOKEN_MAX_TTL_SECONDS,
  ENROLLMENT_TOKEN_MIN_TTL_SECONDS,
  issueEnrollmentToken,
} from '../../../domain/agents/enrollment-tokens.js';
import { cleanName, MAX_NAME_LENGTH } from '../../../domain/names.js';
import { requireOrgRole } from '../../auth/session.js';
import { errorResponses, orgParams, timestamp, uuid } from '../../schemas/common.js';
import { noQuery } from '../../schemas/management.js';
import { enrollmentTokenExample } from '../../schemas/examples.js';

/**
 * Enrollment tokens: any member may issue one (members may add agents; only owners revoke them).
 * The plaintext is in this answer only; the store keeps its hash.
 */
export async function enrollmentTokenRoutes(app: FastifyInstance): Promise<void> {
  app.post<{ Params: { orgId: string }; Body: { name?: string; expiresInSeconds?: number } | null }>(
    '/orgs/:orgId/enrollment-tokens',
    {
      config: { action: 'agents.enroll' },
      schema: {
        operationId: 'createEnrollmentToken',
        summary: 'Issue a single-use agent enrollment token (default lifetime 1 hour)',
        tags: ['dashboard'],
        params: orgParams,
        querystring: noQuery,
        body: {
          // No body at all is the same as {}: every field is optional.
          type: ['object', 'null'],
          additionalProperties: false,
          examples: [{ name: 'lab machines', expiresInSeconds: 3600 }],
          properties: {
            name: { type: 'string', minLength: 1, maxLength: MAX_NAME_LENGTH },
            expiresInSeconds: {
              type: 'integer',
              minimum: ENROLLMENT_TOKEN_MIN_TTL_SECONDS,
              maximum: ENROLLMENT_TOKEN_MAX_TTL_SECONDS,
            },
          },
        },
        response: {
          201: {
            type: 'object',
            required: ['id', 'name', 'token', 'expiresAt'],
            properties: {
              id: uuid,
              name: { type: ['string', 'null'] },
              token: { type: 'string', description: 'drve_…; shown this once' },
              expiresAt: timestamp,
            },
            examples: [enrollmentTokenExample],
          },
          ...errorResponses(401, 403, 404, 422),
        },
      },
    },
    async (request, reply) => {
      const { orgId, userId } = await requireOrgRole(request, request.params.orgId);
      const body = request.body ?? {};
      const name = body.name === undefined ? null : cleanName('body.name', body.name);
      const issued = await issueEnrollmentToken(app.ctx.repos.enrollmentTokens, app.ctx.clock, {
        orgId,
        createdBy: userId,
        name,
        expiresInSeconds: body.expiresInSeconds,
      });
      await app.ctx.audit.record({
        orgId,
        actorType: 'user',
        actorId: userId,
        action: 'enrollment_token.create',
        targetType: 'enrollment_token',
        targetId: issued.id,
        metadata: { name, expiresAt: issued.expiresAt },
      });
      return reply.code(201).send(issued);
    },
  );
}

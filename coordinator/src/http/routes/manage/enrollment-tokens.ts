import type { FastifyInstance } from 'fastify';
import {
  ENROLLMENT_TOKEN_MAX_TTL_SECONDS,
  ENROLLMENT_TOKEN_MIN_TTL_SECONDS,
  type EnrollmentTokenView,
} from '../../../domain/agents/enrollment-tokens.js';
import { ENROLLMENT_TOKEN_STATES, type EnrollmentTokenState } from '../../../domain/model/enrollment-tokens.js';
import { cleanName, MAX_NAME_LENGTH } from '../../../domain/names.js';
import { requireOrgRole } from '../../auth/session.js';
import { cursorQueryProperty, pageResponse, parseCursor, sendPage } from '../../pagination.js';
import { errorResponses, idParams, nullableTimestamp, orgParams, timestamp, uuid } from '../../schemas/common.js';
import { EXAMPLE_IDS, enrollmentTokenExample } from '../../schemas/examples.js';
import { noQuery } from '../../schemas/management.js';
import { named } from '../../schemas/named.js';

export const ENROLLMENT_TOKENS_DEFAULT_LIMIT = 100;
export const ENROLLMENT_TOKENS_MAX_LIMIT = 500;

const EnrollmentTokenSchema = named('EnrollmentToken', {
  type: 'object',
  required: [
    'id',
    'name',
    'state',
    'createdBy',
    'createdByEmail',
    'createdAt',
    'expiresAt',
    'usedAt',
    'usedByAgentId',
    'revokedAt',
    'revokedBy',
  ],
  properties: {
    id: uuid,
    name: { type: ['string', 'null'] },
    state: {
      type: 'string',
      enum: ENROLLMENT_TOKEN_STATES,
      description:
        'open: it may still enroll a machine; used: it enrolled usedByAgentId; revoked: revoked unused; expired: ended unused',
    },
    createdBy: { type: ['string', 'null'], description: 'the member who made it (null once their account is gone)' },
    createdByEmail: { type: ['string', 'null'] },
    createdAt: timestamp,
    expiresAt: timestamp,
    usedAt: nullableTimestamp,
    usedByAgentId: { type: ['string', 'null'], description: 'the agent it enrolled' },
    revokedAt: nullableTimestamp,
    revokedBy: { type: ['string', 'null'], description: 'the member who revoked it' },
  },
  examples: [
    {
      id: EXAMPLE_IDS.enrollmentToken,
      name: 'lab machines',
      state: 'open',
      createdBy: EXAMPLE_IDS.user,
      createdByEmail: 'ops@example.com',
      createdAt: '2026-11-25T09:58:05.856Z',
      expiresAt: '2026-11-25T10:58:05.856Z',
      usedAt: null,
      usedByAgentId: null,
      revokedAt: null,
      revokedBy: null,
    },
  ],
} as const);

/** The API's view of a token: the list's cursor key is the header's, not a field. */
const toView = ({ listKey: _key, orgId: _org, ...view }: EnrollmentTokenView) => view;

const tokenParams = idParams('orgId', 'enrollmentTokenId');

/**
 * Enrollment tokens: any member but a viewer may issue one (members may add agents), everyone
 * reads them, and an issuer revokes their own unspent ones (another's: owners and operators). The
 * plaintext is in the issuing answer only; the store keeps its hash.
 */
export async function enrollmentTokenRoutes(app: FastifyInstance): Promise<void> {
  const { enrollmentTokens } = app.ctx;

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
      const actor = await requireOrgRole(request, request.params.orgId);
      const body = request.body ?? {};
      const name = body.name === undefined ? null : cleanName('body.name', body.name);
      const issued = await enrollmentTokens.issue(actor, { name, expiresInSeconds: body.expiresInSeconds });
      return reply.code(201).send(issued);
    },
  );

  app.get<{
    Params: { orgId: string };
    Querystring: { state?: EnrollmentTokenState; limit: number; cursor?: string };
  }>(
    '/orgs/:orgId/enrollment-tokens',
    {
      schema: {
        operationId: 'listEnrollmentTokens',
        summary:
          "List the organization's enrollment tokens, newest first, never their secret; next page cursor in the x-next-cursor header",
        tags: ['dashboard'],
        params: orgParams,
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: {
            state: { type: 'string', enum: ENROLLMENT_TOKEN_STATES, description: 'only the tokens in this state now' },
            limit: {
              type: 'integer',
              minimum: 1,
              maximum: ENROLLMENT_TOKENS_MAX_LIMIT,
              default: ENROLLMENT_TOKENS_DEFAULT_LIMIT,
            },
            cursor: cursorQueryProperty,
          },
        },
        response: { 200: pageResponse(EnrollmentTokenSchema, 'tokens'), ...errorResponses(401, 404, 422) },
      },
    },
    async (request, reply) => {
      const actor = await requireOrgRole(request, request.params.orgId);
      const { state, limit, cursor } = request.query;
      const tokens = await enrollmentTokens.list(actor, { state, before: parseCursor(cursor), limit: limit + 1 });
      return sendPage(reply, tokens, limit, (t) => t.listKey).map(toView);
    },
  );

  app.delete<{ Params: { orgId: string; enrollmentTokenId: string } }>(
    '/orgs/:orgId/enrollment-tokens/:enrollmentTokenId',
    {
      config: { action: 'agents.enroll' },
      schema: {
        operationId: 'revokeEnrollmentToken',
        summary:
          'Revoke an unspent enrollment token: it enrolls nothing from now on; it stays listed as revoked (409 once it was used)',
        tags: ['dashboard'],
        params: tokenParams,
        querystring: noQuery,
        response: { 200: EnrollmentTokenSchema, ...errorResponses(401, 403, 404, 409, 422) },
      },
    },
    async (request) => {
      const actor = await requireOrgRole(request, request.params.orgId);
      return toView(await enrollmentTokens.revoke(actor, request.params.enrollmentTokenId));
    },
  );
}

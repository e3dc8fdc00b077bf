import type { FastifyInstance } from 'fastify';
import type { ApiToken } from '../../../domain/model/api-tokens.js';
import { issueToken, MAX_RATE_LIMIT, parseIssueRequest, type IssueRequest } from '../../../domain/api-tokens.js';
import { STORAGE_PERMISSIONS } from '../../../domain/grants.js';
import { MAX_NAME_LENGTH } from '../../../domain/names.js';
import { checkGrantTargets, GRANT_TYPES, MAX_GRANT_IDS } from '../../../domain/scopes.js';
import { notFound } from '../../../errors.js';
import { isoNow } from '../../../util/clock.js';
import { requireOrgRole } from '../../auth/session.js';
import { errorResponses, idParams, nullableTimestamp, orgParams, timestamp, uuid } from '../../schemas/common.js';
import { noQuery, RateLimitSchema } from '../../schemas/management.js';

/**
 * API tokens of an organization. Any member lists, issues and revokes them (revoking is a
 * protective act: whoever sees a leaked token can stop it). The plaintext `drv_...` is in the
 * issuing answer only; the store keeps its SHA-256.
 */

const idList = { type: 'array', maxItems: MAX_GRANT_IDS, items: uuid } as const;

const GrantBody = {
  type: 'object',
  additionalProperties: false,
  required: ['type'],
  properties: {
    type: { type: 'string', enum: GRANT_TYPES },
    agentIds: { ...idList, description: 'agent grant' },
    triggerIds: { ...idList, description: 'trigger grant' },
    bindingIds: { ...idList, type: ['array', 'null'], description: 'storage grant; null: every binding' },
    permissions: {
      type: 'array',
      maxItems: 16,
      items: { type: 'string', enum: STORAGE_PERMISSIONS },
      description: 'storage grant',
    },
  },
} as const;

const limit = {
  type: ['integer', 'null'],
  minimum: 1,
  maximum: MAX_RATE_LIMIT,
  description: 'null or omitted: no limit',
} as const;

const IssueBody = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'scopes'],
  properties: {
    name: { type: 'string', minLength: 1, maxLength: MAX_NAME_LENGTH },
    scopes: {
      type: 'array',
      maxItems: 16,
      items: GrantBody,
      description: 'each grant type at most once; may be empty',
    },
    rateLimitPerMinute: limit,
    rateLimitPerHour: limit,
    rateLimitPerDay: limit,
    expiresAt: {
      type: ['string', 'null'],
      format: 'date-time',
      maxLength: 64,
      description: 'future; null or omitted: never',
    },
  },
} as const;

export const ApiTokenSchema = {
  type: 'object',
  required: ['id', 'name', 'hint', 'scopes', 'rateLimit', 'expiresAt', 'revokedAt', 'createdAt'],
  properties: {
    id: uuid,
    name: { type: 'string' },
    hint: { type: 'string', description: 'drv_… and the last four characters' },
    scopes: {
      type: 'array',
      items: {
        type: 'object',
        required: ['type'],
        properties: {
          type: { type: 'string', enum: GRANT_TYPES },
          agentIds: { type: 'array', items: uuid },
          triggerIds: { type: 'array', items: uuid },
          bindingIds: { type: ['array', 'null'], items: uuid },
          permissions: { type: 'array', items: { type: 'string', enum: STORAGE_PERMISSIONS } },
        },
      },
    },
    rateLimit: RateLimitSchema,
    expiresAt: nullableTimestamp,
    revokedAt: nullableTimestamp,
    createdAt: timestamp,
  },
} as const;

const IssuedApiTokenSchema = {
  ...ApiTokenSchema,
  required: [...ApiTokenSchema.required, 'token'],
  properties: { ...ApiTokenSchema.properties, token: { type: 'string', description: 'drv_…; shown this once' } },
} as const;

const tokenParams = idParams('orgId', 'tokenId');
type TokenParams = { orgId: string; tokenId: string };

/** What the audit log keeps of a token: never the plaintext, the hash or the hint. */
const auditView = (token: ApiToken) => ({
  name: token.name,
  scopes: token.scopes,
  rateLimit: token.rateLimit,
  expiresAt: token.expiresAt,
});

export async function apiTokenRoutes(app: FastifyInstance): Promise<void> {
  const { repos, audit, clock } = app.ctx;

  app.get<{ Params: { orgId: string } }>(
    '/orgs/:orgId/api-tokens',
    {
      schema: {
        summary: "List the organization's API tokens, newest first (revoked ones included)",
        tags: ['dashboard'],
        params: orgParams,
        querystring: noQuery,
        response: { 200: { type: 'array', items: ApiTokenSchema }, ...errorResponses(401, 404, 422) },
      },
    },
    async (request) => {
      const { orgId } = await requireOrgRole(request, request.params.orgId);
      return repos.apiTokens.listByOrg(orgId);
    },
  );

  app.post<{ Params: { orgId: string }; Body: IssueRequest }>(
    '/orgs/:orgId/api-tokens',
    {
      schema: {
        summary: 'Issue an API token; the plaintext is returned this once',
        tags: ['dashboard'],
        params: orgParams,
        querystring: noQuery,
        body: IssueBody,
        response: { 201: IssuedApiTokenSchema, ...errorResponses(401, 404, 422) },
      },
    },
    async (request, reply) => {
      const { orgId, userId } = await requireOrgRole(request, request.params.orgId);
      const fields = parseIssueRequest(request.body, clock.now());
      await checkGrantTargets(fields.scopes, {
        agents: (ids) => repos.agents.listByIds(orgId, ids),
        triggers: (ids) => repos.triggers.listByIds(orgId, ids),
        bindings: () => repos.storageBindings.listByOrg(orgId),
      });
      const issued = issueToken({ orgId, userId, ...fields, createdAt: isoNow(clock) });
      await repos.apiTokens.insert(issued.token, issued.hash);
      await audit.record({
        orgId,
        actorType: 'user',
        actorId: userId,
        action: 'api_token.issue',
        targetType: 'api_token',
        targetId: issued.token.id,
        metadata: auditView(issued.token),
      });
      return reply.code(201).send({ ...issued.token, token: issued.plaintext });
    },
  );

  app.get<{ Params: TokenParams }>(
    '/orgs/:orgId/api-tokens/:tokenId',
    {
      schema: {
        summary: 'Read an API token (never its plaintext)',
        tags: ['dashboard'],
        params: tokenParams,
        querystring: noQuery,
        response: { 200: ApiTokenSchema, ...errorResponses(401, 404, 422) },
      },
    },
    async (request) => {
      const { orgId } = await requireOrgRole(request, request.params.orgId);
      const token = await repos.apiTokens.findInOrg(orgId, request.params.tokenId);
      if (!token) throw notFound('API token');
      return token;
    },
  );

  app.delete<{ Params: TokenParams }>(
    '/orgs/:orgId/api-tokens/:tokenId',
    {
      schema: {
        summary: 'Revoke an API token; it stays listed with revokedAt',
        tags: ['dashboard'],
        params: tokenParams,
        querystring: noQuery,
        response: { 200: ApiTokenSchema, ...errorResponses(401, 404, 422) },
      },
    },
    async (request) => {
      const { orgId, userId } = await requireOrgRole(request, request.params.orgId);
      const before = await repos.apiTokens.findInOrg(orgId, request.params.tokenId);
      if (!before) throw notFound('API token');
      const revoked = await repos.apiTokens.revoke(orgId, before.id, isoNow(clock));
      if (!revoked) throw notFound('API token');
      // Revoking twice answers the same token; only the first revocation is an event.
      if (before.revokedAt === null) {
        await audit.record({
          orgId,
          actorType: 'user',
          actorId: userId,
          action: 'api_token.revoke',
          targetType: 'api_token',
          targetId: revoked.id,
          metadata: { name: revoked.name },
        });
      }
      return revoked;
    },
  );
}

import type { FastifyInstance } from 'fastify';
import { MAX_RATE_LIMIT, type IssueRequest } from '../../../domain/tokens/api-tokens.js';
import { STORAGE_PERMISSIONS } from '../../../domain/model/api-tokens.js';
import { MAX_NAME_LENGTH } from '../../../domain/names.js';
import { GRANT_TYPES, MAX_GRANT_IDS } from '../../../domain/tokens/scopes.js';
import { requireOrgRole } from '../../auth/session.js';
import { errorResponses, idParams, nullableTimestamp, orgParams, timestamp, uuid } from '../../schemas/common.js';
import { noQuery, RateLimitSchema } from '../../schemas/management.js';
import { apiTokenExample, issueApiTokenBodyExample } from '../../schemas/examples.js';
import { listOf } from '../../schemas/examples.js';
import { named } from '../../schemas/named.js';

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
  examples: [issueApiTokenBodyExample],
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
    expiresInSeconds: {
      type: 'integer',
      minimum: 1,
      description:
        "instead of expiresAt: the token expires this many seconds after it is issued, on the coordinator's clock",
    },
  },
} as const;

/** A grant of a token as answers show it: its type and that type's fields (docs/management.md, "API tokens and grants"). */
export const GrantSchema = named('Grant', {
  oneOf: [
    {
      type: 'object',
      required: ['type', 'agentIds'],
      properties: {
        type: { type: 'string', enum: ['agent'] },
        agentIds: { type: 'array', items: uuid, description: 'the agents whose workflows it lists' },
      },
    },
    {
      type: 'object',
      required: ['type', 'triggerIds'],
      properties: {
        type: { type: 'string', enum: ['trigger'] },
        triggerIds: { type: 'array', items: uuid, description: 'the triggers it runs' },
      },
    },
    {
      type: 'object',
      required: ['type', 'bindingIds', 'permissions'],
      properties: {
        type: { type: 'string', enum: ['storage'] },
        bindingIds: { type: ['array', 'null'], items: uuid, description: 'null: every binding' },
        permissions: { type: 'array', items: { type: 'string', enum: STORAGE_PERMISSIONS } },
      },
    },
  ],
  examples: apiTokenExample.scopes,
} as const);

export const ApiTokenSchema = named('ApiToken', {
  type: 'object',
  examples: [apiTokenExample],
  required: ['id', 'name', 'hint', 'scopes', 'rateLimit', 'expiresAt', 'revokedAt', 'createdAt', 'userId'],
  properties: {
    id: uuid,
    name: { type: 'string' },
    userId: {
      ...uuid,
      description: 'the member who issued it, who may revoke it (any token of the organization: an owner)',
    },
    hint: { type: 'string', description: 'drv_… and the last four characters' },
    scopes: { type: 'array', items: GrantSchema },
    rateLimit: RateLimitSchema,
    expiresAt: nullableTimestamp,
    revokedAt: nullableTimestamp,
    createdAt: timestamp,
  },
} as const);

const IssuedApiTokenSchema = named('IssuedApiToken', {
  ...ApiTokenSchema,
  required: [...ApiTokenSchema.required, 'token'],
  properties: { ...ApiTokenSchema.properties, token: { type: 'string', description: 'drv_…; shown this once' } },
  examples: [{ ...apiTokenExample, token: 'drv_3fQ8kZ1mX7pL2wR9tY4vB6nC0sD5hJ9f2c' }],
} as const);

const tokenParams = idParams('orgId', 'tokenId');
type TokenParams = { orgId: string; tokenId: string };

export async function apiTokenRoutes(app: FastifyInstance): Promise<void> {
  const { apiTokens } = app.ctx;

  app.get<{ Params: { orgId: string } }>(
    '/orgs/:orgId/api-tokens',
    {
      schema: {
        operationId: 'listApiTokens',
        summary: "List the organization's API tokens, newest first (revoked ones included)",
        tags: ['dashboard'],
        params: orgParams,
        querystring: noQuery,
        response: { 200: listOf(ApiTokenSchema), ...errorResponses(401, 404, 422) },
      },
    },
    async (request) => apiTokens.list(await requireOrgRole(request, request.params.orgId)),
  );

  app.post<{ Params: { orgId: string }; Body: IssueRequest }>(
    '/orgs/:orgId/api-tokens',
    {
      config: { action: 'api_tokens.issue' },
      schema: {
        operationId: 'issueApiToken',
        summary: 'Issue an API token; the plaintext is returned this once',
        tags: ['dashboard'],
        params: orgParams,
        querystring: noQuery,
        body: IssueBody,
        response: { 201: IssuedApiTokenSchema, ...errorResponses(401, 403, 404, 422) },
      },
    },
    async (request, reply) => {
      const issued = await apiTokens.issue(await requireOrgRole(request, request.params.orgId), request.body);
      return reply.code(201).send({ ...issued.token, token: issued.plaintext });
    },
  );

  app.get<{ Params: TokenParams }>(
    '/orgs/:orgId/api-tokens/:tokenId',
    {
      schema: {
        operationId: 'getApiToken',
        summary: 'Read an API token (never its plaintext)',
        tags: ['dashboard'],
        params: tokenParams,
        querystring: noQuery,
        response: { 200: ApiTokenSchema, ...errorResponses(401, 404, 422) },
      },
    },
    async (request) => apiTokens.get(await requireOrgRole(request, request.params.orgId), request.params.tokenId),
  );

  app.delete<{ Params: TokenParams }>(
    '/orgs/:orgId/api-tokens/:tokenId',
    {
      config: { action: 'api_tokens.issue' },
      schema: {
        operationId: 'revokeApiToken',
        summary: 'Revoke an API token; it stays listed with revokedAt',
        tags: ['dashboard'],
        params: tokenParams,
        querystring: noQuery,
        response: { 200: ApiTokenSchema, ...errorResponses(401, 403, 404, 422) },
      },
    },
    async (request) => apiTokens.revoke(await requireOrgRole(request, request.params.orgId), request.params.tokenId),
  );
}

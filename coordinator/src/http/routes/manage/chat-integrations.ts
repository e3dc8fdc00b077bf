import type { FastifyInstance } from 'fastify';
import { CHAT_PROVIDERS, type ChatProvider } from '../../../domain/model/triggers.js';
import { requireOrgRole } from '../../auth/session.js';
import { emptyBody, errorResponses, idParams, orgParams, timestamp, uuid } from '../../schemas/common.js';
import { noQuery } from '../../schemas/management.js';
import { EXAMPLE_IDS, listOf } from '../../schemas/examples.js';

const IntegrationSchema = {
  type: 'object',
  required: ['id', 'provider', 'teamId', 'teamName', 'scopes', 'connectedByUserId', 'createdAt'],
  properties: {
    id: uuid,
    provider: { type: 'string', enum: CHAT_PROVIDERS },
    teamId: { type: 'string', description: "Slack's workspace id or Discord's guild id" },
    teamName: { type: 'string' },
    scopes: { type: 'string', description: 'the scopes the workspace granted, comma-separated' },
    connectedByUserId: uuid,
    createdAt: timestamp,
  },
  examples: [
    {
      id: EXAMPLE_IDS.chatIntegration,
      provider: 'slack',
      teamId: 'T024BE7LD',
      teamName: 'Acme',
      scopes: 'chat:write,commands,app_mentions:read',
      connectedByUserId: EXAMPLE_IDS.user,
      createdAt: '2026-11-25T09:58:05.856Z',
    },
  ],
} as const;

const providerParams = {
  type: 'object',
  required: ['orgId', 'provider'],
  properties: { orgId: uuid, provider: { type: 'string', enum: CHAT_PROVIDERS } },
} as const;

/**
 * Chat workspaces of an organization (docs/chat.md, "Connecting a workspace"): members list
 * them; owners connect (the provider's OAuth flow) and disconnect. Thin: domain/chat/integrations.ts.
 */
export async function chatIntegrationRoutes(app: FastifyInstance): Promise<void> {
  const chat = () => app.ctx.chatIntegrations;

  app.get<{ Params: { orgId: string } }>(
    '/orgs/:orgId/chat-integrations',
    {
      schema: {
        operationId: 'listChatIntegrations',
        summary: 'The Slack workspaces and Discord guilds connected to the organization, oldest first',
        tags: ['dashboard'],
        params: orgParams,
        querystring: noQuery,
        response: { 200: listOf(IntegrationSchema), ...errorResponses(401, 404, 422) },
      },
    },
    async (request) => {
      const { orgId } = await requireOrgRole(request, request.params.orgId);
      return chat().list(orgId);
    },
  );

  app.get<{ Params: { orgId: string } }>(
    '/orgs/:orgId/chat-providers',
    {
      schema: {
        operationId: 'listChatProviders',
        summary: 'Which chat providers this coordinator is set up for (its operator sets their app credentials)',
        tags: ['dashboard'],
        params: orgParams,
        querystring: noQuery,
        response: {
          200: {
            type: 'array',
            items: {
              type: 'object',
              required: ['provider', 'configured'],
              properties: { provider: { type: 'string', enum: CHAT_PROVIDERS }, configured: { type: 'boolean' } },
            },
            examples: [
              [
                { provider: 'slack', configured: true },
                { provider: 'discord', configured: false },
              ],
            ],
          },
          ...errorResponses(401, 404, 422),
        },
      },
    },
    async (request) => {
      await requireOrgRole(request, request.params.orgId);
      const configured = chat().providers();
      return CHAT_PROVIDERS.map((provider) => ({ provider, configured: configured[provider] }));
    },
  );

  app.post<{ Params: { orgId: string; provider: ChatProvider }; Body: null | Record<string, never> }>(
    '/orgs/:orgId/chat-integrations/:provider/connect',
    {
      schema: {
        operationId: 'connectChatWorkspace',
        summary:
          "Start connecting a workspace (owner): send the browser to `authorizeUrl`, the provider's consent page; valid ten minutes",
        tags: ['dashboard'],
        params: providerParams,
        querystring: noQuery,
        body: emptyBody,
        response: {
          200: {
            type: 'object',
            required: ['authorizeUrl', 'expiresAt'],
            properties: { authorizeUrl: { type: 'string' }, expiresAt: timestamp },
            examples: [
              {
                authorizeUrl:
                  'https://slack.com/oauth/v2/authorize?client_id=1234.5678&scope=chat%3Awrite%2Ccommands&state=3q2-7wZm9v',
                expiresAt: '2026-11-25T10:08:05.856Z',
              },
            ],
          },
          ...errorResponses(401, 403, 404, 409, 422),
        },
      },
    },
    async (request) => {
      const access = await requireOrgRole(request, request.params.orgId, 'owner');
      return chat().connect(access, request.params.provider);
    },
  );

  app.delete<{ Params: { orgId: string; integrationId: string } }>(
    '/orgs/:orgId/chat-integrations/:integrationId',
    {
      schema: {
        operationId: 'disconnectChatWorkspace',
        summary: 'Disconnect a workspace (owner); its chat triggers stop firing; answers it as it was',
        tags: ['dashboard'],
        params: idParams('orgId', 'integrationId'),
        querystring: noQuery,
        response: { 200: IntegrationSchema, ...errorResponses(401, 403, 404, 422) },
      },
    },
    async (request) => {
      const access = await requireOrgRole(request, request.params.orgId, 'owner');
      return chat().disconnect(access, request.params.integrationId);
    },
  );
}

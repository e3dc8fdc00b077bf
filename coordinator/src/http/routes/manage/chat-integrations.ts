import type { FastifyInstance } from 'fastify';
import { CHAT_PROVIDERS, type ChatProvider } from '../../../domain/model/triggers.js';
import { chatConnectCookieOf, setChatConnectCookie } from '../../auth/chat-connect-cookie.js';
import { requireOrgRole, requireSession } from '../../auth/session.js';
import { emptyBody, errorResponses, idParams, orgParams, timestamp, uuid } from '../../schemas/common.js';
import { noQuery } from '../../schemas/management.js';
import { EXAMPLE_IDS, listOf } from '../../schemas/examples.js';
import { named } from '../../schemas/named.js';

const IntegrationSchema = named('ChatIntegration', {
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
} as const);

interface CompleteBody {
  state: string;
  code?: string;
  error?: string;
}

const providerParams = {
  type: 'object',
  required: ['orgId', 'provider'],
  properties: { orgId: uuid, provider: { type: 'string', enum: CHAT_PROVIDERS } },
} as const;

/**
 * Chat workspaces of an organization (docs/chat.md, "Connecting a workspace"): members list
 * them; owners connect (the provider's OAuth flow, bound to their browser by a cookie and
 * finished by the dashboard with their session) and disconnect. Thin: domain/chat/integrations.ts.
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
      config: { action: 'chat.integrations' },
      schema: {
        operationId: 'connectChatWorkspace',
        summary:
          "Start connecting a workspace (owner): send this browser to `authorizeUrl`, the provider's consent page; valid ten minutes, in this browser only",
        description:
          'Sets the cookie `drover_chat_connect` (HttpOnly, SameSite=Strict, ten minutes): the flow can be finished only by the same user, signed in, in the browser holding it (docs/chat.md, "Connecting a workspace").',
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
    async (request, reply) => {
      const access = await requireOrgRole(request, request.params.orgId);
      const { browserKey, ...started } = await chat().connect(
        access,
        request.params.provider,
        chatConnectCookieOf(request),
      );
      setChatConnectCookie(request, reply, browserKey);
      return started;
    },
  );

  app.post<{ Params: { provider: ChatProvider }; Body: CompleteBody }>(
    '/chat/:provider/oauth/complete',
    {
      schema: {
        operationId: 'completeChatWorkspaceConnection',
        summary:
          'Finish connecting a workspace: the code and state the provider sent the browser back with, from the browser and by the owner that started it',
        description:
          'The dashboard calls it from the page the OAuth callback sends the browser to. Needs the session of the owner who started the flow and the `drover_chat_connect` cookie of the browser that started it; the state is used up by the call, whatever its answer.',
        tags: ['dashboard'],
        params: {
          type: 'object',
          required: ['provider'],
          properties: { provider: { type: 'string', enum: CHAT_PROVIDERS } },
        },
        querystring: noQuery,
        body: {
          type: 'object',
          required: ['state'],
          additionalProperties: false,
          properties: {
            state: { type: 'string', minLength: 1, maxLength: 256 },
            code: { type: 'string', maxLength: 2048 },
            error: { type: 'string', maxLength: 256 },
          },
          examples: [{ state: '3q2-7wZm9v', code: '1234.5678.abcd' }],
        },
        response: {
          200: {
            oneOf: [
              {
                type: 'object',
                required: ['outcome', 'orgId', 'integration'],
                properties: {
                  outcome: { type: 'string', enum: ['connected'] },
                  orgId: uuid,
                  integration: IntegrationSchema,
                },
              },
              {
                type: 'object',
                required: ['outcome', 'orgId', 'message'],
                properties: {
                  outcome: { type: 'string', enum: ['failed'] },
                  orgId: uuid,
                  message: { type: 'string', description: 'why it was not connected' },
                },
              },
            ],
            examples: [
              { outcome: 'connected', orgId: EXAMPLE_IDS.org, integration: IntegrationSchema.examples[0] },
              {
                outcome: 'failed',
                orgId: EXAMPLE_IDS.org,
                message: 'Slack was not connected: the app was not allowed',
              },
            ],
          },
          ...errorResponses(400, 401, 403, 404, 409, 422),
        },
      },
    },
    async (request) => {
      const { userId } = await requireSession(request);
      return chat().complete(request.params.provider, request.body, {
        userId,
        browserKey: chatConnectCookieOf(request),
      });
    },
  );

  app.delete<{ Params: { orgId: string; integrationId: string } }>(
    '/orgs/:orgId/chat-integrations/:integrationId',
    {
      config: { action: 'chat.integrations' },
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
      const access = await requireOrgRole(request, request.params.orgId);
      return chat().disconnect(access, request.params.integrationId);
    },
  );
}

import type { FastifyInstance } from 'fastify';
import { CHAT_PROVIDERS, type ChatProvider } from '../../../domain/model/triggers.js';
import { errorResponses } from '../../schemas/common.js';

interface CallbackQuery {
  code?: string;
  state?: string;
  error?: string;
}

/**
 * Where Slack and Discord send the browser back after the operator allowed the app (docs/chat.md).
 * The browser arrives from the provider's site, so the dashboard's SameSite=Strict cookies are
 * not sent with this request: it finishes nothing itself. It sends the browser on to the
 * dashboard's page `/chat/<provider>/finish` with the provider's code and state; that page,
 * on this origin, finishes the flow with the owner's session and the browser's connect cookie
 * (`POST /v1/chat/:provider/oauth/complete`), then shows the organization's integrations page.
 */
export async function chatOAuthCallbackRoutes(app: FastifyInstance): Promise<void> {
  app.get<{ Params: { provider: ChatProvider }; Querystring: CallbackQuery }>(
    '/chat/:provider/oauth/callback',
    {
      schema: {
        operationId: 'completeChatOAuth',
        summary: "The chat provider's OAuth redirect: goes on to the dashboard's page that finishes the connection",
        tags: ['chat'],
        security: [],
        params: {
          type: 'object',
          required: ['provider'],
          properties: { provider: { type: 'string', enum: CHAT_PROVIDERS } },
        },
        querystring: {
          type: 'object',
          properties: {
            code: { type: 'string', maxLength: 2048 },
            state: { type: 'string', maxLength: 256 },
            error: { type: 'string', maxLength: 256 },
            // Providers add their own (guild_id, permissions, error_description, ...).
          },
        },
        response: {
          303: {
            type: 'null',
            description: "to the dashboard's page `/chat/<provider>/finish`, with `code`, `state` and `error`",
          },
          ...errorResponses(404, 409, 422),
        },
      },
    },
    async (request, reply) => {
      const { provider } = request.params;
      app.ctx.chatIntegrations.connector(provider); // 409 when the provider is not set up here
      const page = new URL(`${app.ctx.config.publicUrl}/chat/${provider}/finish`);
      for (const name of ['code', 'state', 'error'] as const) {
        const value = request.query[name];
        if (value !== undefined) page.searchParams.set(name, value);
      }
      return reply.redirect(page.toString(), 303);
    },
  );
}

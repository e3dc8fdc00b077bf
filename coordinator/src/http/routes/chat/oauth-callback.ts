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
 * No session: the browser arrives from the provider's site, so the SameSite=Strict cookie is not
 * sent; the single-use `state` ties the flow to the organization and the owner who started it.
 * Ends with a redirect to the organization's integrations page.
 */
export async function chatOAuthCallbackRoutes(app: FastifyInstance): Promise<void> {
  app.get<{ Params: { provider: ChatProvider }; Querystring: CallbackQuery }>(
    '/chat/:provider/oauth/callback',
    {
      schema: {
        operationId: 'completeChatOAuth',
        summary: "The chat provider's OAuth redirect: stores the workspace, then goes to the dashboard",
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
          302: { type: 'null', description: "to the organization's integrations page" },
          ...errorResponses(400, 404, 409, 422),
        },
      },
    },
    async (request, reply) => {
      const done = await app.ctx.chatIntegrations.complete(request.params.provider, request.query);
      const page = new URL(`${app.ctx.config.publicUrl}/orgs/${done.orgId}/integrations`);
      if (done.outcome === 'connected') {
        page.searchParams.set('connected', done.integration.provider);
        page.searchParams.set('team', done.integration.teamName);
      } else {
        page.searchParams.set('error', done.message);
      }
      return reply.redirect(page.toString(), 302);
    },
  );
}

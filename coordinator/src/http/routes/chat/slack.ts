import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { SlackConfig } from '../../../config/chat-config.js';
import { slackSignatureProblem } from '../../../chat/slack-signature.js';
import type { ChatCommandInput } from '../../../domain/chat/chat-runs.js';
import { AppError, invalid, notFound, unauthorized } from '../../../errors.js';
import { errorResponses } from '../../schemas/common.js';
import { keepRawBodies } from './raw-body.js';

const EPHEMERAL = {
  type: 'object',
  required: ['response_type', 'text'],
  properties: { response_type: { type: 'string', enum: ['ephemeral'] }, text: { type: 'string' } },
  examples: [{ response_type: 'ephemeral', text: 'Started deploy: https://drover.example.com/api/jobs/01a21224-06c1' }],
} as const;

/** A leading mention of the bot (`<@U0BOT>` or `<@U0BOT|drover>`) in an app_mention's text. */
const LEADING_MENTION = /^\s*<@[A-Z0-9]+(\|[^>]*)?>[\s:,]*/;

/**
 * Slack's requests (docs/chat.md, "Chat triggers"): the `/drover` slash command and the Events
 * API (URL verification, app mentions). Every request must carry Slack's `v0` signature over its
 * raw body, made with the signing secret, at most five minutes old (401 otherwise), before its
 * body is even parsed. Slack being off on this coordinator: 404.
 */
export async function slackRoutes(app: FastifyInstance): Promise<void> {
  keepRawBodies(app);
  const verified = (request: FastifyRequest): { slack: SlackConfig; body: Buffer } => {
    const slack = app.ctx.config.chat.slack;
    if (!slack) throw notFound('Slack is not set up on this coordinator; the route');
    const body = request.rawBody ?? Buffer.alloc(0);
    const problem = slackSignatureProblem(
      slack.signingSecret,
      {
        timestamp: header(request, 'x-slack-request-timestamp'),
        signature: header(request, 'x-slack-signature'),
      },
      body,
      app.ctx.clock.now(),
    );
    if (problem) throw unauthorized(`Not a request from Slack: ${problem}`);
    return { slack, body };
  };

  app.post(
    '/chat/slack/commands',
    {
      schema: {
        operationId: 'receiveSlackCommand',
        summary: "Slack's slash command (`/drover <keyword> key=value ...`): a form signed by Slack",
        tags: ['chat'],
        security: [],
        response: { 200: EPHEMERAL, ...errorResponses(400, 401, 404, 422) },
      },
    },
    async (request) => {
      const { body } = verified(request);
      const form = new URLSearchParams(body.toString('utf8'));
      const field = (name: string) => {
        const value = form.get(name);
        if (value === null || (value === '' && name !== 'text')) throw invalid(`body.${name}`, 'is required');
        return value;
      };
      const input: ChatCommandInput = {
        provider: 'slack',
        teamId: field('team_id'),
        channelId: field('channel_id'),
        userId: field('user_id'),
        userName: form.get('user_name') ?? field('user_id'),
        text: field('text'),
        deliveryId: null,
      };
      const answer = await app.ctx.chatRuns.run(input);
      return { response_type: 'ephemeral', text: answer.text };
    },
  );

  app.post(
    '/chat/slack/events',
    {
      schema: {
        operationId: 'receiveSlackEvent',
        summary: "Slack's Events API: URL verification and app mentions, signed by Slack",
        tags: ['chat'],
        security: [],
        response: {
          200: {
            type: 'object',
            properties: { challenge: { type: 'string' }, ok: { type: 'boolean' } },
            examples: [{ ok: true }],
          },
          ...errorResponses(400, 401, 404),
        },
      },
    },
    async (request) => {
      const { body } = verified(request);
      let payload: SlackEventPayload;
      try {
        payload = JSON.parse(body.toString('utf8')) as SlackEventPayload;
      } catch {
        throw new AppError('bad_request', 'The event is not JSON');
      }
      if (payload.type === 'url_verification') return { challenge: String(payload.challenge ?? '') };
      const event = payload.event;
      if (payload.type !== 'event_callback' || event?.type !== 'app_mention') return { ok: true };
      if (!payload.team_id || !event.channel || !event.user)
        throw new AppError('bad_request', 'The mention lacks its team, channel or user');
      const input: ChatCommandInput = {
        provider: 'slack',
        teamId: payload.team_id,
        channelId: event.channel,
        userId: event.user,
        userName: event.user,
        text: (event.text ?? '').replace(LEADING_MENTION, ''),
        // The outcome is answered in the mention's thread (or the thread it was written in).
        messageId: event.thread_ts ?? event.ts ?? null,
        // Slack retries an event it thinks went unanswered: the same event id, one job, one answer.
        deliveryId: payload.event_id ?? null,
      };
      const answer = await app.ctx.chatRuns.run(input);
      // Queued, not posted here: Slack wants this request answered within three seconds.
      await app.ctx.chatRuns.answerMention(input, answer);
      return { ok: true };
    },
  );
}

interface SlackEventPayload {
  type?: string;
  challenge?: unknown;
  team_id?: string;
  event_id?: string;
  event?: { type?: string; channel?: string; user?: string; text?: string; ts?: string; thread_ts?: string };
}

function header(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { SlackConfig } from '../../../config/chat-config.js';
import { slackSignatureProblem } from '../../../domain/chat/providers/slack-signature.js';
import { slackTypedText } from '../../../domain/chat/providers/slack-text.js';
import type { ChatCommandInput } from '../../../domain/chat/chat-runs.js';
import { escapeMrkdwn } from '../../../domain/chat/notifications/slack-message.js';
import { AppError, invalid, notFound, unauthorized } from '../../../errors.js';
import { errorResponses } from '../../schemas/common.js';
import { jsonObjectOf, objectOf, stringOf } from './payload.js';
import { keepRawBodies } from './raw-body.js';

const EPHEMERAL = {
  type: 'object',
  required: ['response_type', 'text'],
  properties: { response_type: { type: 'string', enum: ['ephemeral'] }, text: { type: 'string' } },
  examples: [{ response_type: 'ephemeral', text: 'Started deploy: https://drover.example.com/api/jobs/01a21224-06c1' }],
} as const;

/** A leading mention of the bot (`<@U0BOT>` or `<@U0BOT|drover>`) in an app_mention's text. */
const LEADING_MENTION = /^\s*<@[A-Z0-9]+(\|[^>]*)?>[\s:,]*/;

/** The answer to a slash command received before: Slack shows it to whoever sent it. */
const REPLAYED_COMMAND =
  'This command was already received (the same signed request, sent again): nothing more was started.';

/**
 * Slack's requests (docs/chat.md, "Chat triggers"): the `/drover` slash command and the Events
 * API (URL verification, app mentions). Every request must carry Slack's `v0` signature over its
 * raw body, made with the signing secret, at most five minutes old (401 otherwise), before its
 * body is even parsed. The same signed request received again is not acted on (a replay:
 * domain/chat/replays.ts). Slack being off on this coordinator: 404.
 */
export async function slackRoutes(app: FastifyInstance): Promise<void> {
  keepRawBodies(app);
  const verified = (request: FastifyRequest): { slack: SlackConfig; body: Buffer; timestamp: string } => {
    const slack = app.ctx.config.chat.slack;
    if (!slack) throw notFound('Slack is not set up on this coordinator; the route');
    const body = request.rawBody ?? Buffer.alloc(0);
    const timestamp = header(request, 'x-slack-request-timestamp');
    const problem = slackSignatureProblem(
      slack.signingSecret,
      { timestamp, signature: header(request, 'x-slack-signature') },
      body,
      app.ctx.clock.now(),
    );
    if (problem || timestamp === undefined) throw unauthorized(`Not a request from Slack: ${problem}`);
    return { slack, body, timestamp };
  };
  /** Whether the request is a replay, logged as one: a signed request acted on before. */
  const replayed = async (request: FastifyRequest, body: Buffer, timestamp: string): Promise<boolean> => {
    if (await app.ctx.chatReplays.firstTime('slack', timestamp, body)) return false;
    request.log.warn(
      { provider: 'slack', route: request.routeOptions.url, signedAt: Number(timestamp) },
      'chat request received again (the same signed request): not acted on',
    );
    return true;
  };

  app.post(
    '/chat/slack/commands',
    {
      // The bytes are the route's, checked against the provider's signature (raw-body.ts).
      config: { documented: { rawBody: true } },
      schema: {
        operationId: 'receiveSlackCommand',
        summary: "Slack's slash command (`/drover <keyword> key=value ...`): a form signed by Slack",
        tags: ['chat'],
        security: [],
        response: { 200: EPHEMERAL, ...errorResponses(400, 401, 404, 422) },
      },
    },
    async (request) => {
      const { body, timestamp } = verified(request);
      if (await replayed(request, body, timestamp)) return { response_type: 'ephemeral', text: REPLAYED_COMMAND };
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
        // Slack escapes what people write (`&amp;`, links in `<...>`): the run gets what they typed.
        text: slackTypedText(field('text')),
        deliveryId: null,
      };
      const answer = await app.ctx.chatRuns.run(input);
      return { response_type: 'ephemeral', text: escapeMrkdwn(answer.text) };
    },
  );

  app.post(
    '/chat/slack/events',
    {
      // The bytes are the route's, checked against the provider's signature (raw-body.ts).
      config: { documented: { rawBody: true } },
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
      const { body, timestamp } = verified(request);
      const payload = jsonObjectOf(body, 'The event');
      if (payload.type === 'url_verification') return { challenge: stringOf(payload.challenge) ?? '' };
      // A replay is acknowledged (Slack would retry anything else) and not acted on. Slack's own
      // retries (`X-Slack-Retry-Num`) are signed anew: the event id finds the first delivery's job.
      if (await replayed(request, body, timestamp)) return { ok: true };
      const event = objectOf(payload.event);
      if (payload.type !== 'event_callback' || event?.type !== 'app_mention') return { ok: true };
      // A mention written by a bot or an integration (a notification that names the bot, another
      // app's post) runs nothing: two bots could otherwise start each other's runs in a loop. The
      // Discord Gateway's handler drops messages of bot authors likewise.
      if (event.bot_id !== undefined || event.subtype === 'bot_message') return { ok: true };
      const teamId = stringOf(payload.team_id);
      const channelId = stringOf(event.channel);
      const userId = stringOf(event.user);
      if (!teamId || !channelId || !userId)
        throw new AppError('bad_request', 'The mention lacks its team, channel or user');
      const input: ChatCommandInput = {
        provider: 'slack',
        teamId,
        channelId,
        userId,
        userName: userId,
        text: slackTypedText((stringOf(event.text) ?? '').replace(LEADING_MENTION, '')),
        // The outcome is answered in the mention's thread (or the thread it was written in).
        messageId: stringOf(event.thread_ts) ?? stringOf(event.ts) ?? null,
        // Slack retries an event it thinks went unanswered: the same event id, one job, one answer.
        deliveryId: stringOf(payload.event_id) ?? null,
        // A mention written in a thread is answered there.
        threadId: stringOf(event.thread_ts) ?? null,
      };
      const answer = await app.ctx.chatRuns.run(input);
      // Queued, not posted here: Slack wants this request answered within three seconds.
      await app.ctx.chatRuns.answerMention(input, answer);
      return { ok: true };
    },
  );
}

function header(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

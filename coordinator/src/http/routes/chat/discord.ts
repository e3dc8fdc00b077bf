import type { KeyObject } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { DISCORD_LIMITS } from '../../../domain/chat/notifications/discord-message.js';
import { shorten } from '../../../domain/chat/notifications/notice-text.js';
import { DISCORD_THREAD_TYPES } from '../../../domain/chat/providers/discord-connector.js';
import { discordPublicKey, discordSignatureProblem } from '../../../domain/chat/providers/discord-signature.js';
import { notFound, unauthorized } from '../../../errors.js';
import { errorResponses } from '../../schemas/common.js';
import { jsonObjectOf, objectOf, stringOf } from './payload.js';
import { keepRawBodies } from './raw-body.js';

/**
 * The numbers of Discord's interaction protocol this route answers with (Discord's developer
 * documentation, "Receiving and Responding"), as discord-api-types names them: written here so
 * that every coordinator does not load that package's ~40 modules (~5 MiB) for three enums.
 */
const InteractionType = { Ping: 1, ApplicationCommand: 2 } as const;
const InteractionResponseType = { Pong: 1, ChannelMessageWithSource: 4 } as const;
const MessageFlags = { Ephemeral: 1 << 6 } as const;

/**
 * Discord's interactions endpoint (docs/chat.md, "Chat triggers"): PING, and the `/drover`
 * application command the coordinator registers in each connected guild. Every request must
 * carry Discord's Ed25519 signature over timestamp and raw body by the application's public key,
 * at most five minutes old (401 otherwise), before the body is parsed. The same signed
 * interaction received again is not acted on (a replay: domain/chat/replays.ts). Discord being
 * off: 404.
 */
export async function discordRoutes(app: FastifyInstance): Promise<void> {
  keepRawBodies(app);
  let key: { hex: string; key: KeyObject } | null = null;
  const verified = (request: FastifyRequest): { body: Buffer; timestamp: string } => {
    const discord = app.ctx.config.chat.discord;
    if (!discord) throw notFound('Discord is not set up on this coordinator; the route');
    if (key?.hex !== discord.publicKey) key = { hex: discord.publicKey, key: discordPublicKey(discord.publicKey) };
    const body = request.rawBody ?? Buffer.alloc(0);
    const timestamp = header(request, 'x-signature-timestamp');
    const problem = discordSignatureProblem(
      key.key,
      { timestamp, signature: header(request, 'x-signature-ed25519') },
      body,
      app.ctx.clock.now(),
    );
    if (problem || timestamp === undefined) throw unauthorized(`Not a request from Discord: ${problem}`);
    return { body, timestamp };
  };

  app.post(
    '/chat/discord/interactions',
    {
      // The bytes are the route's, checked against the provider's signature (raw-body.ts).
      config: { documented: { rawBody: true } },
      schema: {
        operationId: 'receiveDiscordInteraction',
        summary: "Discord's interactions: PING and the `/drover` command, signed by Discord",
        tags: ['chat'],
        security: [],
        response: {
          200: {
            type: 'object',
            required: ['type'],
            properties: {
              type: { type: 'integer' },
              data: {
                type: 'object',
                properties: { content: { type: 'string' }, flags: { type: 'integer' } },
              },
            },
            // 4: a message answering the command; flags 64: seen only by its author.
            examples: [
              {
                type: 4,
                data: { content: 'Started deploy: https://drover.example.com/api/jobs/01a21224-06c1', flags: 64 },
              },
            ],
          },
          ...errorResponses(400, 401, 404),
        },
      },
    },
    async (request) => {
      const { body, timestamp } = verified(request);
      const interaction = jsonObjectOf(body, 'The interaction');
      if (interaction.type === InteractionType.Ping) return { type: InteractionResponseType.Pong };
      // Discord refuses a response whose content is over 2000 characters, and its writer then
      // sees only that the application did not respond: an answer that names a long argument
      // (a keyword, a value of the up to 6000 characters of the option) is cut to fit.
      const ephemeral = (content: string) => ({
        type: InteractionResponseType.ChannelMessageWithSource,
        data: { content: shorten(content, DISCORD_LIMITS.content), flags: MessageFlags.Ephemeral },
      });
      if (!(await app.ctx.chatReplays.firstTime('discord', timestamp, body))) {
        request.log.warn(
          {
            provider: 'discord',
            route: request.routeOptions.url,
            signedAt: Number(timestamp),
            interactionId: interaction.id,
          },
          'chat request received again (the same signed request): not acted on',
        );
        return ephemeral(
          'This interaction was already received (the same signed request, sent again): nothing more was started.',
        );
      }
      const data = objectOf(interaction.data);
      if (interaction.type !== InteractionType.ApplicationCommand || data?.name !== 'drover') {
        return ephemeral('Drover only answers its `/drover` command.');
      }
      const member = objectOf(interaction.member);
      const user = objectOf(member?.user) ?? objectOf(interaction.user);
      const guildId = stringOf(interaction.guild_id);
      // A thread's command is its channel's, as Slack's threads are their channel's: the partial
      // channel of an interaction in a thread carries the channel it belongs to (`parent_id`).
      const channel = objectOf(interaction.channel);
      const typedIn = stringOf(interaction.channel_id) ?? stringOf(channel?.id);
      const parentId = DISCORD_THREAD_TYPES.has(Number(channel?.type)) ? stringOf(channel?.parent_id) : undefined;
      const channelId = parentId ?? typedIn;
      const userId = stringOf(user?.id);
      if (!guildId || !channelId || !userId) {
        return ephemeral('Drover answers `/drover` in the channels of a server, not in direct messages.');
      }
      const options = Array.isArray(data.options) ? data.options.map(objectOf) : [];
      const text = options.find((o) => o?.name === 'command')?.value;
      const answer = await app.ctx.chatRuns.run({
        provider: 'discord',
        teamId: guildId,
        channelId,
        userId,
        userName: stringOf(member?.nick) ?? stringOf(user?.global_name) ?? stringOf(user?.username) ?? userId,
        text: typeof text === 'string' ? text : '',
        deliveryId: stringOf(interaction.id) ?? null,
        // The outcome goes to the thread it was typed in, not to its channel.
        replyChannelId: parentId === undefined ? null : (typedIn ?? null),
      });
      return ephemeral(answer.text);
    },
  );
}

function header(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

import { WebSocketManager, WebSocketShardEvents } from '@discordjs/ws';
import {
  GatewayDispatchEvents,
  GatewayIntentBits,
  Routes,
  type APIChannel,
  type GatewayMessageCreateDispatchData,
} from 'discord-api-types/v10';
import type { Logger } from 'pino';
import type { DiscordConfig } from '../../../config/chat-config.js';
import type { ChatCommandInput, ChatRunService } from '../chat-runs.js';
import { DISCORD_THREAD_TYPES, discordRest } from './discord-connector.js';

/** How long to wait before connecting again when Discord's Gateway could not be reached. */
const RETRY_MS = 30_000;

/** The most channels whose parent (a thread's channel, or none) is remembered. */
const PARENTS_KEPT = 1_000;

/**
 * Mentions of the bot in Discord (docs/chat.md, "Chat triggers"): a Gateway connection (with
 * `@discordjs/ws`, which heartbeats, resumes and reconnects) receives the guilds' new messages;
 * one that starts with a mention of the bot is a chat command like `/drover`. The answer is a
 * reply to the message (Discord has no ephemeral messages outside interactions), queued in the
 * chat outbox like every message; in a thread, the trigger is its channel's and the answers are
 * posted in the thread. A message seen again (a resumed session replaying it) starts
 * no second job and gets no second answer.
 */
export class DiscordGateway {
  private manager: WebSocketManager | null = null;
  private botUserId: string | null = null;
  private retry: NodeJS.Timeout | null = null;
  private stopped = false;
  private readonly rest;
  /** Channel id → the channel a thread belongs to (null: not a thread), as Discord said. */
  private readonly parents = new Map<string, string | null>();

  constructor(private readonly deps: { config: DiscordConfig; chatRuns: ChatRunService; logger: Logger }) {
    this.rest = discordRest(deps.config);
  }

  /** Connects in the background: the coordinator starts whether or not Discord answers. */
  start(): void {
    void this.connect();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.retry) clearTimeout(this.retry);
    const manager = this.manager;
    this.manager = null;
    await manager?.destroy();
  }

  private async connect(): Promise<void> {
    const { config, logger } = this.deps;
    const manager = new WebSocketManager({
      token: config.botToken,
      // Messages that mention the bot carry their content without the privileged intent.
      intents: GatewayIntentBits.Guilds | GatewayIntentBits.GuildMessages,
      rest: this.rest,
      shardCount: 1,
    });
    manager.on(WebSocketShardEvents.Ready, (data) => {
      this.botUserId = data.user.id;
      logger.info({ botUserId: data.user.id }, 'Discord Gateway connected');
    });
    manager.on(WebSocketShardEvents.Dispatch, (payload) => {
      if (payload.t === GatewayDispatchEvents.MessageCreate) void this.onMessage(payload.d);
    });
    manager.on(WebSocketShardEvents.Error, (error) => logger.warn({ err: error }, 'Discord Gateway error'));
    this.manager = manager;
    try {
      await manager.connect();
    } catch (error) {
      this.manager = null;
      await Promise.resolve(manager.destroy()).catch(() => undefined);
      if (this.stopped) return;
      logger.warn({ err: error, retryInMs: RETRY_MS }, 'Discord Gateway could not be reached; mentions wait');
      this.retry = setTimeout(() => void this.connect(), RETRY_MS);
      this.retry.unref();
    }
  }

  private async onMessage(message: GatewayMessageCreateDispatchData): Promise<void> {
    const bot = this.botUserId;
    // Written by a bot or an integration, runs nothing (as Slack's bot messages): two bots could
    // start each other's runs. A webhook's message has the webhook for author, which Discord
    // does not promise to flag as a bot: its `webhook_id` says what it is.
    if (!bot || message.author.bot || message.webhook_id !== undefined || !message.guild_id) return;
    const mention = new RegExp(`^\\s*<@!?${bot}>[\\s:,]*`);
    if (!mention.test(message.content)) return;
    const parentId = await this.parentOf(message.channel_id);
    const input: ChatCommandInput = {
      provider: 'discord',
      teamId: message.guild_id,
      // A thread's mention is its channel's, as a `/drover` typed in it; the answers go to the thread.
      channelId: parentId ?? message.channel_id,
      replyChannelId: parentId === null ? null : message.channel_id,
      userId: message.author.id,
      userName: message.member?.nick ?? message.author.global_name ?? message.author.username,
      text: message.content.replace(mention, ''),
      // The answer and the outcome are replies to this message.
      messageId: message.id,
      deliveryId: message.id,
    };
    try {
      const { chatRuns } = this.deps;
      await chatRuns.answerMention(input, await chatRuns.run(input));
    } catch (error) {
      this.deps.logger.warn({ err: error, channelId: message.channel_id }, 'Discord mention could not be answered');
    }
  }

  /**
   * The channel a thread belongs to, or null for a channel that is not a thread. A message on the
   * Gateway does not say (an interaction's partial channel does): Discord's REST API is asked once
   * per channel. Not known (Discord not answering): null, the mention is the channel's own.
   */
  private async parentOf(channelId: string): Promise<string | null> {
    const known = this.parents.get(channelId);
    if (known !== undefined) return known;
    let channel: APIChannel;
    try {
      channel = (await this.rest.get(Routes.channel(channelId))) as APIChannel;
    } catch (error) {
      this.deps.logger.warn({ err: error, channelId }, 'Discord did not say whether a channel is a thread');
      return null;
    }
    const parentId =
      DISCORD_THREAD_TYPES.has(channel.type) && 'parent_id' in channel ? (channel.parent_id ?? null) : null;
    if (this.parents.size >= PARENTS_KEPT) this.parents.clear();
    this.parents.set(channelId, parentId);
    return parentId;
  }
}

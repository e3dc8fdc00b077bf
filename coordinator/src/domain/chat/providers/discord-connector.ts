import { DiscordAPIError, makeURLSearchParams, RateLimitError, REST } from '@discordjs/rest';
import {
  ApplicationCommandOptionType,
  ChannelType,
  PermissionFlagsBits,
  Routes,
  type RESTPostOAuth2AccessTokenResult,
  type RESTPutAPIApplicationGuildCommandsJSONBody,
} from 'discord-api-types/v10';
import type { DiscordConfig } from '../../../config/chat-config.js';
import { ChatProviderError, type ChatConnector, type ConnectedWorkspace } from '../connector.js';

/**
 * The channel types that are threads: a thread is a channel of its own whose `parent_id` is the
 * channel it belongs to, where a trigger listens (as Slack's threads are their channel's).
 */
export const DISCORD_THREAD_TYPES: ReadonlySet<number> = new Set([
  ChannelType.AnnouncementThread,
  ChannelType.PublicThread,
  ChannelType.PrivateThread,
]);

/** What the bot may do in a guild: see channels, send messages with embeds, read history for replies. */
export const DISCORD_BOT_PERMISSIONS =
  PermissionFlagsBits.ViewChannel |
  PermissionFlagsBits.SendMessages |
  PermissionFlagsBits.EmbedLinks |
  PermissionFlagsBits.ReadMessageHistory;

/** The `/drover <keyword> [key=value ...]` command, registered in each connected guild. */
export const DROVER_COMMAND: RESTPutAPIApplicationGuildCommandsJSONBody = [
  {
    name: 'drover',
    description: 'Run a Drover trigger: /drover <keyword> [key=value ...]',
    options: [
      {
        type: ApplicationCommandOptionType.String,
        name: 'command',
        description: 'the trigger keyword, then its arguments (key=value, quotes for spaces)',
        required: true,
      },
    ],
  },
];

/**
 * A REST client that keeps the application's bot token. @discordjs/rest forgets its token at the
 * first 401 it is answered (it takes the token for revoked): every later request of that client
 * then failed without reaching Discord ("Expected token to be set"), the outbox's messages to
 * every guild, the registrations of `/drover` and the Gateway's connections alike, until the
 * coordinator restarted, even once Discord took the token again. The token is a setting: a 401 is
 * retried with it (docs/chat.md, "Delivery").
 */
class BotTokenREST extends REST {
  readonly #botToken: string;

  constructor(options: ConstructorParameters<typeof REST>[0], botToken: string) {
    super(options);
    this.#botToken = botToken;
    super.setToken(botToken);
  }

  override setToken(token: string | null): this {
    return super.setToken(token || this.#botToken);
  }
}

/** A REST client on the configured API base, with the bot token, that never retries a 429 on its own. */
export function discordRest(config: DiscordConfig): REST {
  return new BotTokenREST(
    { api: config.apiUrl, version: '10', retries: 0, timeout: 10_000, rejectOnRateLimit: () => true },
    config.botToken,
  );
}

export function discordError(error: unknown): ChatProviderError {
  if (error instanceof RateLimitError) {
    return new ChatProviderError('discord', 'Discord is rate limiting us', Math.ceil(error.retryAfter / 1000));
  }
  if (error instanceof DiscordAPIError) {
    return new ChatProviderError('discord', `Discord answered ${error.status}: ${error.message}`);
  }
  return new ChatProviderError('discord', `Discord could not be reached: ${(error as Error).message ?? String(error)}`);
}

/** Connecting a Discord guild: the bot install flow with a code grant (the token answer names the guild). */
export class DiscordConnector implements ChatConnector {
  readonly provider = 'discord' as const;
  private readonly rest: REST;

  constructor(private readonly config: DiscordConfig) {
    this.rest = discordRest(config);
  }

  authorizeUrl(state: string, redirectUri: string): string {
    const url = new URL(this.config.authorizeUrl);
    url.searchParams.set('client_id', this.config.applicationId);
    url.searchParams.set('scope', 'bot applications.commands');
    url.searchParams.set('permissions', DISCORD_BOT_PERMISSIONS.toString());
    url.searchParams.set('response_type', 'code');
    url.searchParams.set('redirect_uri', redirectUri);
    url.searchParams.set('state', state);
    return url.toString();
  }

  async exchangeCode(code: string, redirectUri: string): Promise<ConnectedWorkspace> {
    let answer: RESTPostOAuth2AccessTokenResult & { guild?: { id: string; name: string } };
    try {
      answer = (await this.rest.post(Routes.oauth2TokenExchange(), {
        auth: false,
        passThroughBody: true,
        headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
        body: makeURLSearchParams({
          grant_type: 'authorization_code',
          code,
          redirect_uri: redirectUri,
          client_id: this.config.applicationId,
          client_secret: this.config.clientSecret,
        }),
      })) as typeof answer;
    } catch (error) {
      throw discordError(error);
    }
    if (!answer.guild?.id) {
      throw new ChatProviderError('discord', 'Discord answered without a guild: add the bot to a server');
    }
    // The user's own token is not needed: the bot acts with the application's bot token.
    return {
      teamId: answer.guild.id,
      teamName: answer.guild.name,
      botUserId: null,
      accessToken: null,
      scopes: answer.scope,
    };
  }

  async afterConnect(workspace: ConnectedWorkspace): Promise<void> {
    try {
      await this.rest.put(Routes.applicationGuildCommands(this.config.applicationId, workspace.teamId), {
        body: DROVER_COMMAND,
      });
    } catch (error) {
      throw discordError(error);
    }
  }
}

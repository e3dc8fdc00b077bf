import { LogLevel, WebClient, type Logger as SlackLogger, type WebAPICallError } from '@slack/web-api';
import type { Logger } from 'pino';
import type { SlackConfig } from '../../../config/chat-config.js';
import { ChatProviderError, type ChatConnector, type ConnectedWorkspace } from '../connector.js';

/** The bot scopes Drover asks for: slash commands, app mentions, posting (also where it was not invited). */
export const SLACK_BOT_SCOPES = ['app_mentions:read', 'chat:write', 'chat:write.public', 'commands'] as const;

/** Where the coordinator's log takes the Web API client's own messages. */
export type SlackClientLog = Pick<Logger, 'trace' | 'info' | 'warn' | 'error'>;

/**
 * The Web API client's own messages (a request that failed, Slack's `response_metadata`
 * warnings) as lines of the coordinator's log. The client's default logger wrote them to the
 * console, as text among the log's JSON lines, whatever DROVER_LOG_LEVEL said. Its debug lines
 * (one per client made, one per request) are at `trace`.
 */
function slackLogger(log: SlackClientLog): SlackLogger {
  const at =
    (level: keyof SlackClientLog) =>
    (...msg: unknown[]) =>
      log[level]({ provider: 'slack' }, `Slack Web API client: ${msg.map(String).join(' ')}`);
  return {
    debug: at('trace'),
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
    setLevel: () => undefined,
    getLevel: () => LogLevel.DEBUG,
    setName: () => undefined,
  };
}

/** A Web API client that never retries on its own: callers decide (the outbox retries with backoff). */
export function slackWebClient(config: SlackConfig, log: SlackClientLog, token?: string): WebClient {
  return new WebClient(token, {
    slackApiUrl: config.apiUrl,
    retryConfig: { retries: 0 },
    rejectRateLimitedCalls: true,
    timeout: 10_000,
    logger: slackLogger(log),
  });
}

/** Slack's `oauth.v2.access` turned into a ChatProviderError with Slack's own error code. */
export function slackError(error: unknown): ChatProviderError {
  const e = error as WebAPICallError & { retryAfter?: number; data?: { error?: string } };
  const retryAfter = typeof e.retryAfter === 'number' ? e.retryAfter : null;
  const reason = e.data?.error ?? e.message ?? String(error);
  return new ChatProviderError('slack', `Slack answered: ${reason}`, retryAfter);
}

/** Connecting a Slack workspace: OAuth v2 with a bot token (https://api.slack.com/authentication/oauth-v2). */
export class SlackConnector implements ChatConnector {
  readonly provider = 'slack' as const;
  private readonly client: WebClient;

  constructor(
    private readonly config: SlackConfig,
    log: SlackClientLog,
  ) {
    this.client = slackWebClient(config, log);
  }

  authorizeUrl(state: string, redirectUri: string): string {
    const url = new URL(this.config.authorizeUrl);
    url.searchParams.set('client_id', this.config.clientId);
    url.searchParams.set('scope', SLACK_BOT_SCOPES.join(','));
    url.searchParams.set('redirect_uri', redirectUri);
    url.searchParams.set('state', state);
    return url.toString();
  }

  async exchangeCode(code: string, redirectUri: string): Promise<ConnectedWorkspace> {
    let answer;
    try {
      answer = await this.client.oauth.v2.access({
        client_id: this.config.clientId,
        client_secret: this.config.clientSecret,
        code,
        redirect_uri: redirectUri,
      });
    } catch (error) {
      throw slackError(error);
    }
    const teamId = answer.team?.id;
    if (!answer.access_token || !teamId) {
      throw new ChatProviderError('slack', 'Slack answered without a bot token or workspace id');
    }
    return {
      teamId,
      teamName: answer.team?.name ?? teamId,
      botUserId: answer.bot_user_id ?? null,
      accessToken: answer.access_token,
      scopes: answer.scope ?? '',
    };
  }

  async afterConnect(): Promise<void> {
    // The slash command and the event subscription are declared in the app's manifest.
  }
}

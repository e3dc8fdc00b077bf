import {
  ErrorCode,
  type ChatPostEphemeralArguments,
  type ChatPostMessageArguments,
  type WebAPICallError,
} from '@slack/web-api';
import { retryAfterMs } from '@drover/shared';
import type { SlackConfig } from '../../../../config/chat-config.js';
import { slackPost } from '../../notifications/slack-message.js';
import { DeliveryFailure, type ChatDelivery, type ChatSender } from '../../notifications/sender.js';
import { slackWebClient, type SlackClientLog } from '../slack-connector.js';

/**
 * Slack's error codes that say "try again later" (https://api.slack.com/methods/chat.postMessage#errors);
 * every other one is final. `rate_limited` ("Application has posted too many messages") comes as
 * HTTP 200 `{ok: false}`, not as a 429 with its Retry-After; `team_added_to_org` and
 * `org_login_required` last while the workspace moves into an Enterprise organization.
 */
const TRANSIENT = new Set([
  'internal_error',
  'fatal_error',
  'service_unavailable',
  'request_timeout',
  'ratelimited',
  'rate_limited',
  'team_added_to_org',
  'org_login_required',
]);

/** A Web API failure as a DeliveryFailure: rate limits and outages are retried, Slack's refusals are not. */
export function slackDeliveryFailure(error: unknown): DeliveryFailure {
  const e = error as WebAPICallError;
  switch (e.code) {
    case ErrorCode.RateLimitedError:
      return new DeliveryFailure(
        `Slack is rate limiting us (retry after ${e.retryAfter} s)`,
        'later',
        Math.max(0, e.retryAfter) * 1000,
      );
    case ErrorCode.PlatformError: {
      const reason = e.data.error;
      return new DeliveryFailure(`Slack answered: ${reason}`, TRANSIENT.has(reason) ? 'later' : 'never');
    }
    case ErrorCode.HTTPError:
      // A 503 of an outage may say when to come back: that wait, not the outbox's own backoff
      // (which stands in for `Retry-After: 0`, lest the outbox try again at once, over and over).
      return new DeliveryFailure(
        `Slack answered HTTP ${e.statusCode} ${e.statusMessage}`.trim(),
        'later',
        retryAfterMs(e.headers['retry-after']) || null,
      );
    case ErrorCode.RequestError:
      return new DeliveryFailure(`Slack could not be reached: ${e.original?.message ?? e.message}`, 'later');
    default:
      return new DeliveryFailure(`Slack could not be reached: ${(error as Error).message ?? String(error)}`, 'later');
  }
}

/** Posts to Slack with `chat.postMessage` (or `chat.postEphemeral`) and the workspace's bot token. */
export class SlackSender implements ChatSender {
  readonly provider = 'slack' as const;

  constructor(
    private readonly config: SlackConfig,
    private readonly log: SlackClientLog,
  ) {}

  async send(d: ChatDelivery): Promise<void> {
    if (!d.token)
      throw new DeliveryFailure(`Slack workspace ${d.target.teamId} has no bot token: connect it again`, 'never');
    const post = slackPost(d.payload, d.target, d.publicUrl);
    const client = slackWebClient(this.config, this.log, d.token);
    try {
      // The SDK types a message as blocks-or-text unions; slackPost builds one of them.
      if (post.method === 'chat.postEphemeral')
        await client.chat.postEphemeral(post.args as ChatPostEphemeralArguments);
      else await client.chat.postMessage(post.args as ChatPostMessageArguments);
    } catch (error) {
      throw slackDeliveryFailure(error);
    }
  }
}

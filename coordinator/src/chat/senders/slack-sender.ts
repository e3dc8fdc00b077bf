import { ErrorCode, type WebAPICallError } from '@slack/web-api';
import type { SlackConfig } from '../../config/chat-config.js';
import { slackJobMessage } from '../../domain/chat/notifications/slack-message.js';
import { DeliveryFailure, type ChatDelivery, type ChatSender } from '../../domain/chat/notifications/sender.js';
import { slackWebClient } from '../slack-connector.js';

/** Slack's error codes that say "try again later" (https://api.slack.com/methods/chat.postMessage#errors); every other one is final. */
const TRANSIENT = new Set(['internal_error', 'fatal_error', 'service_unavailable', 'request_timeout', 'ratelimited']);

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
      return new DeliveryFailure(`Slack answered HTTP ${e.statusCode} ${e.statusMessage}`.trim(), 'later');
    case ErrorCode.RequestError:
      return new DeliveryFailure(`Slack could not be reached: ${e.original?.message ?? e.message}`, 'later');
    default:
      return new DeliveryFailure(`Slack could not be reached: ${(error as Error).message ?? String(error)}`, 'later');
  }
}

/** Posts to Slack with `chat.postMessage` and the workspace's bot token. */
export class SlackSender implements ChatSender {
  readonly provider = 'slack' as const;

  constructor(private readonly config: SlackConfig) {}

  async send(d: ChatDelivery): Promise<void> {
    if (!d.token)
      throw new DeliveryFailure(`Slack workspace ${d.target.teamId} has no bot token: connect it again`, 'never');
    const message = slackJobMessage(d.payload, d.target.channelId, d.publicUrl);
    try {
      await slackWebClient(this.config, d.token).chat.postMessage(message);
    } catch (error) {
      throw slackDeliveryFailure(error);
    }
  }
}

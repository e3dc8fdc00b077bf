import { DiscordAPIError, HTTPError, RateLimitError, type REST } from '@discordjs/rest';
import { Routes } from 'discord-api-types/v10';
import type { DiscordConfig } from '../../../../config/chat-config.js';
import { discordPost } from '../../notifications/discord-message.js';
import { DeliveryFailure, type ChatDelivery, type ChatSender } from '../../notifications/sender.js';
import { discordRest } from '../discord-connector.js';

/**
 * A REST failure as a DeliveryFailure. A 429, a 5xx, a network failure and a 401 (the bot token,
 * a setting its operator can fix) are retried; any other 4xx (unknown channel, missing access:
 * the bot is not in that channel) is final.
 */
export function discordDeliveryFailure(error: unknown): DeliveryFailure {
  if (error instanceof RateLimitError) {
    return new DeliveryFailure(
      `Discord is rate limiting us (retry after ${Math.ceil(error.retryAfter / 1000)} s)`,
      'later',
      Math.max(0, error.retryAfter),
    );
  }
  if (error instanceof DiscordAPIError) {
    const retry = error.status >= 500 || error.status === 401 ? 'later' : 'never';
    return new DeliveryFailure(`Discord answered ${error.status}: ${error.message}`, retry);
  }
  if (error instanceof HTTPError) {
    return new DeliveryFailure(`Discord answered HTTP ${error.status}`, 'later');
  }
  return new DeliveryFailure(`Discord could not be reached: ${(error as Error).message ?? String(error)}`, 'later');
}

/**
 * How long one message may take to post, its wait in the REST client's queue included: the
 * client sends a channel's messages one after the other, and its own timeout (10 s) counts only
 * the request. Behind a message to a channel that does not answer, each next one to that channel
 * waited its 10 s in turn: a round of 20 took over three minutes, holding every other message,
 * and outlived its claim (OUTBOX_LEASE_MS), so that another coordinator could send it again.
 */
export const DISCORD_SEND_TIMEOUT_MS = 10_000;

/** Posts to a Discord channel (`POST /channels/{id}/messages`, a reply or not) with the application's bot token. */
export class DiscordSender implements ChatSender {
  readonly provider = 'discord' as const;
  private readonly rest: REST;

  constructor(
    config: DiscordConfig,
    private readonly sendTimeoutMs = DISCORD_SEND_TIMEOUT_MS,
  ) {
    this.rest = discordRest(config);
  }

  async send(d: ChatDelivery): Promise<void> {
    if (d.target.type === 'ephemeral') {
      throw new DeliveryFailure('Discord has no messages seen by one person outside interactions', 'never');
    }
    const body = discordPost(d.payload, d.target, d.publicUrl);
    const signal = AbortSignal.timeout(this.sendTimeoutMs);
    try {
      await this.rest.post(Routes.channelMessages(d.target.channelId), { body, signal });
    } catch (error) {
      if (signal.aborted) {
        throw new DeliveryFailure(`Discord did not answer within ${this.sendTimeoutMs / 1000} s`, 'later');
      }
      throw discordDeliveryFailure(error);
    }
  }
}

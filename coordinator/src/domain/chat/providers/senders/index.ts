import type { ChatConfig } from '../../../../config/chat-config.js';
import type { ChatSenders } from '../../notifications/sender.js';
import { DiscordSender } from './discord-sender.js';
import { SlackSender } from './slack-sender.js';

/** The message senders of the providers this coordinator has app credentials for. */
export function chatSenders(config: ChatConfig): ChatSenders {
  return {
    ...(config.slack ? { slack: new SlackSender(config.slack) } : {}),
    ...(config.discord ? { discord: new DiscordSender(config.discord) } : {}),
  };
}

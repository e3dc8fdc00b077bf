import type { ChatConfig } from '../../../../config/chat-config.js';
import type { SlackClientLog } from '../slack-connector.js';
import type { ChatSenders } from '../../notifications/sender.js';

/** The message senders of the providers this coordinator has app credentials for, loaded only then (connectors.ts). */
export async function chatSenders(config: ChatConfig, log: SlackClientLog): Promise<ChatSenders> {
  return {
    ...(config.slack ? { slack: new (await import('./slack-sender.js')).SlackSender(config.slack, log) } : {}),
    ...(config.discord ? { discord: new (await import('./discord-sender.js')).DiscordSender(config.discord) } : {}),
  };
}

import type { ChatConfig } from '../../../../config/chat-config.js';
import type { ChatSenders } from '../../notifications/sender.js';

/** The message senders of the providers this coordinator has app credentials for, loaded only then (connectors.ts). */
export async function chatSenders(config: ChatConfig): Promise<ChatSenders> {
  return {
    ...(config.slack ? { slack: new (await import('./slack-sender.js')).SlackSender(config.slack) } : {}),
    ...(config.discord ? { discord: new (await import('./discord-sender.js')).DiscordSender(config.discord) } : {}),
  };
}

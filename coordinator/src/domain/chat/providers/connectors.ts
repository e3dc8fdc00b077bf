import type { ChatConfig } from '../../../config/chat-config.js';
import type { ChatConnectors } from '../connector.js';
import { DiscordConnector } from './discord-connector.js';
import { SlackConnector } from './slack-connector.js';

/** The connectors of the providers this coordinator has app credentials for. */
export function chatConnectors(config: ChatConfig): ChatConnectors {
  return {
    ...(config.slack ? { slack: new SlackConnector(config.slack) } : {}),
    ...(config.discord ? { discord: new DiscordConnector(config.discord) } : {}),
  };
}

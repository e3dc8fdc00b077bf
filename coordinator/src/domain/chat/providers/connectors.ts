import type { ChatConfig } from '../../../config/chat-config.js';
import type { ChatConnectors } from '../connector.js';
import type { SlackClientLog } from './slack-connector.js';

/**
 * The connectors of the providers this coordinator has app credentials for. A provider's client
 * library is loaded only when it is configured: Discord's alone holds ~30 MiB of memory once
 * loaded (docs/performance.md, "Coordinator memory").
 */
export async function chatConnectors(config: ChatConfig, log: SlackClientLog): Promise<ChatConnectors> {
  return {
    ...(config.slack ? { slack: new (await import('./slack-connector.js')).SlackConnector(config.slack, log) } : {}),
    ...(config.discord
      ? { discord: new (await import('./discord-connector.js')).DiscordConnector(config.discord) }
      : {}),
  };
}

import type { ChatProvider } from '../model/triggers.js';

/** A workspace as the provider describes it once the OAuth flow is complete. */
export interface ConnectedWorkspace {
  teamId: string;
  teamName: string;
  botUserId: string | null;
  /** The workspace's token to keep (sealed), or null when the provider needs none. */
  accessToken: string | null;
  scopes: string;
}

/**
 * One chat provider's side of connecting a workspace (chat/slack, chat/discord): the address
 * people authorize the app at, the exchange of the code the provider sends back, and what must
 * happen once a workspace is connected (Discord registers the `/drover` command in the guild).
 */
export interface ChatConnector {
  readonly provider: ChatProvider;
  authorizeUrl(state: string, redirectUri: string): string;
  /** Throws ChatProviderError when the provider refuses the code. */
  exchangeCode(code: string, redirectUri: string): Promise<ConnectedWorkspace>;
  afterConnect(workspace: ConnectedWorkspace): Promise<void>;
}

/** The provider answered with an error (its own words in `message`). */
export class ChatProviderError extends Error {
  constructor(
    readonly provider: ChatProvider,
    message: string,
    /** Seconds the provider asked to wait (HTTP 429 `Retry-After`), when it did. */
    readonly retryAfterSeconds: number | null = null,
  ) {
    super(message);
    this.name = 'ChatProviderError';
  }
}

export type ChatConnectors = Partial<Record<ChatProvider, ChatConnector>>;

import type { ChatProvider } from './triggers.js';

/** A Slack workspace or Discord guild connected to an organization (docs/chat.md). */
export interface ChatIntegration {
  id: string;
  orgId: string;
  provider: ChatProvider;
  /** Slack's team id (`T…`) or Discord's guild id. */
  teamId: string;
  teamName: string;
  /** Slack: the app's bot user id; Discord: null. */
  botUserId: string | null;
  /** The provider's token for this workspace, sealed (domain/chat/secret-box.ts); null: none. */
  sealedAccessToken: string | null;
  /** The scopes granted, comma-separated as the provider lists them. */
  scopes: string;
  connectedByUserId: string;
  createdAt: string;
}

/** An OAuth flow in progress: single use, bound to the organization, the owner and their browser. */
export interface OAuthState {
  stateHash: string;
  orgId: string;
  userId: string;
  provider: ChatProvider;
  /** SHA-256 of the key the starting browser's connect cookie holds; null on states older than it. */
  browserHash: string | null;
  createdAt: string;
  expiresAt: string;
}

export interface ChatIntegrationRepository {
  /**
   * Stores the integration, or replaces the organization's own connection of the same workspace
   * (a reconnect: new token, same id). `taken` when the workspace is another organization's;
   * `not_owner`, with nothing written, when `connectedByUserId` may no longer connect workspaces
   * (checked under the organization's lock, which role changes and removals take too).
   */
  connect(
    integration: ChatIntegration,
  ): Promise<{ outcome: 'connected'; integration: ChatIntegration } | { outcome: 'taken' } | { outcome: 'not_owner' }>;
  listByOrg(orgId: string): Promise<ChatIntegration[]>;
  findInOrg(orgId: string, id: string): Promise<ChatIntegration | null>;
  findByTeam(provider: ChatProvider, teamId: string): Promise<ChatIntegration | null>;
  /** Removes it; false when it was not there. */
  delete(orgId: string, id: string): Promise<boolean>;

  /** Stores a new state and forgets the expired ones. */
  addState(state: OAuthState): Promise<void>;
  /** Marks the state used and answers it, once, if it exists and has not expired at `now`. */
  consumeState(stateHash: string, provider: ChatProvider, now: string): Promise<OAuthState | null>;
}

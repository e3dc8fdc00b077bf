import { queryOptions } from '@tanstack/react-query';
import type { Answer, RequestBody, Schema } from '@drover/shared/api';
import { api, apiPath } from './client';

/** The chat providers and the organization's connected workspaces (docs/chat.md, "Connecting a workspace"). */

export type ChatProvider = ChatIntegration['provider'];

export const PROVIDER_NAMES: Record<ChatProvider, string> = { slack: 'Slack', discord: 'Discord' };

/** What a provider's workspace is called there. */
export const TEAM_WORDS: Record<ChatProvider, string> = { slack: 'workspace', discord: 'server' };

/** What finishing a connection came to, carried to the integrations page in its history state. */
export type ChatOutcome = { connected: ChatProvider; team: string } | { error: string };

/** The coordinator settings that turn a provider on, all required together (docs/chat.md, "Settings"). */
export const PROVIDER_SETTINGS: Record<ChatProvider, string[]> = {
  slack: ['DROVER_SLACK_CLIENT_ID', 'DROVER_SLACK_CLIENT_SECRET', 'DROVER_SLACK_SIGNING_SECRET'],
  discord: [
    'DROVER_DISCORD_APPLICATION_ID',
    'DROVER_DISCORD_PUBLIC_KEY',
    'DROVER_DISCORD_CLIENT_SECRET',
    'DROVER_DISCORD_BOT_TOKEN',
  ],
};

/** Whether the coordinator's settings turn a provider on. */
export type ChatProviderState = Answer<'listChatProviders'>[number];

export type ChatIntegration = Schema<'ChatIntegration'>;

export const chatProvidersQuery = (orgId: string) =>
  queryOptions({
    queryKey: ['orgs', orgId, 'chat-providers'],
    queryFn: () => api<ChatProviderState[]>('GET', apiPath`/orgs/${orgId}/chat-providers`),
  });

export const chatIntegrationsQuery = (orgId: string) =>
  queryOptions({
    queryKey: ['orgs', orgId, 'chat-integrations'],
    queryFn: () => api<ChatIntegration[]>('GET', apiPath`/orgs/${orgId}/chat-integrations`),
  });

/** Starts the OAuth flow (owners): the provider's consent page, to send the browser to. */
export const startConnect = (orgId: string, provider: ChatProvider) =>
  api<Answer<'connectChatWorkspace'>>('POST', apiPath`/orgs/${orgId}/chat-integrations/${provider}/connect`);

export const disconnect = (orgId: string, integrationId: string) =>
  api<ChatIntegration>('DELETE', apiPath`/orgs/${orgId}/chat-integrations/${integrationId}`);

/** What finishing a connection answers: connected, or refused by the provider (its words in `message`). */
export type ConnectCompletion = Answer<'completeChatWorkspaceConnection'>;

/**
 * Finishes the OAuth flow with the code and state the provider sent the browser back with: only
 * in the browser that started it (its connect cookie) and by the owner who did (the session).
 */
export const completeConnect = (provider: ChatProvider, body: RequestBody<'completeChatWorkspaceConnection'>) =>
  api<ConnectCompletion>('POST', apiPath`/chat/${provider}/oauth/complete`, { body });

import { queryOptions } from '@tanstack/react-query';
import { api, apiPath } from './client';
import type { Agent, Org, Session, SignInMethods, Workflow } from './types';
import { AGENT_DIRECTORY_REFRESH_MS, LIVE_REFRESH_MS } from './refresh';

export { LIVE_REFRESH_MS } from './refresh';

export const sessionQuery = queryOptions({
  queryKey: ['session'],
  queryFn: () => api<Session>('GET', apiPath`/auth/session`, { expectUnauthorized: true }),
  retry: false,
  staleTime: Infinity,
});

/** The sign-in methods the operator turned on: passwords, single sign-on (read without a session). */
export const signInMethodsQuery = queryOptions({
  queryKey: ['auth', 'methods'],
  queryFn: () => api<SignInMethods>('GET', apiPath`/auth/methods`, { expectUnauthorized: true }),
  staleTime: Infinity,
});

export const orgsQuery = queryOptions({
  queryKey: ['orgs'],
  queryFn: () => api<Org[]>('GET', apiPath`/orgs`),
});

/**
 * The key every read of the organization's agents is under (pages, names, searches, one agent): a
 * change made in this dashboard (rename, labels, revoke) refreshes each. No page reads every agent.
 */
export const agentsKey = (orgId: string) => ['orgs', orgId, 'agents'] as const;

/** One agent (`GET /orgs/:orgId/agents/:agentId`), under the list's key: a change to the list reaches it. */
export const agentQuery = (orgId: string, agentId: string) =>
  queryOptions({
    queryKey: ['orgs', orgId, 'agents', agentId],
    queryFn: () => api<Agent>('GET', apiPath`/orgs/${orgId}/agents/${agentId}`),
    refetchInterval: LIVE_REFRESH_MS,
  });

/** The key every read of the organization's workflows is under: a change of limits refreshes each. */
export const workflowsKey = (orgId: string) => ['orgs', orgId, 'workflows'] as const;

/** The active workflows of one agent (`?agentId=`), under the workflows' key: as often as they. */
export const agentWorkflowsQuery = (orgId: string, agentId: string) =>
  queryOptions({
    queryKey: ['orgs', orgId, 'workflows', { agentId }],
    queryFn: () => api<Workflow[]>('GET', apiPath`/orgs/${orgId}/workflows?${new URLSearchParams({ agentId })}`),
    refetchInterval: AGENT_DIRECTORY_REFRESH_MS,
  });

const FINISHED = new Set(['success', 'failed', 'timed_out', 'cancelled', 'rejected']);
export const isFinished = (status: string): boolean => FINISHED.has(status);

import { infiniteQueryOptions, queryOptions } from '@tanstack/react-query';
import { api, apiPage, apiPath, type Page } from './client';
import { LIVE_REFRESH_MS } from './refresh';
import type { Agent, Workflow } from './types';

/** What the Agents page narrows its list to (docs/management.md, "A fleet's agents, a page at a time"). */
export interface AgentFilters {
  /** A label selector that parses. */
  selector?: string;
  status?: string;
  /** Text of the name or hostname. */
  q?: string;
}

/** A page of agents, with the workflows they reported. */
export interface AgentPage extends Page<Agent> {
  workflows: Workflow[];
}

/** Agents a page: what a screen shows and a person reads before narrowing the list. */
export const AGENT_PAGE = 100;

/**
 * The organization's agents that match the filters, most recently registered first, a page at a
 * time (`x-next-cursor`), each page with its agents' workflows; each page says how many match in all. A refresh reads every page shown
 * again, one after the other, so it comes every 5 s per page shown: a fleet of thousands sends a
 * page every few seconds, never every agent. Under the agents list's key: a change made on the
 * page (rename, labels, revoke) refreshes it.
 */
export const agentPagesQuery = (orgId: string, filters: AgentFilters) =>
  infiniteQueryOptions({
    queryKey: ['orgs', orgId, 'agents', 'pages', filters],
    queryFn: async ({ pageParam }): Promise<AgentPage> => {
      const query = new URLSearchParams({ limit: String(AGENT_PAGE) });
      for (const key of ['selector', 'status', 'q'] as const) if (filters[key]) query.set(key, filters[key]);
      if (pageParam) query.set('cursor', pageParam);
      const page = await apiPage<Agent>(apiPath`/orgs/${orgId}/agents?${query}`);
      if (page.items.length === 0) return { ...page, workflows: [] };
      const ids = new URLSearchParams(page.items.map((agent) => ['agentId', agent.id]));
      return { ...page, workflows: await api<Workflow[]>('GET', apiPath`/orgs/${orgId}/workflows?${ids}`) };
    },
    initialPageParam: '',
    getNextPageParam: (last) => last.nextCursor ?? undefined,
    refetchInterval: (query) => LIVE_REFRESH_MS * Math.max(1, query.state.data?.pages.length ?? 1),
  });

/** How many agents the organization has (one agent read, the count in its header). */
export const agentCountQuery = (orgId: string) =>
  queryOptions({
    // Not `['orgs', orgId, 'agents', 'count']`: that is the key of an agent of id `count`.
    queryKey: ['orgs', orgId, 'agents', { count: true }],
    queryFn: async () => (await apiPage<Agent>(apiPath`/orgs/${orgId}/agents?limit=1`)).total ?? 0,
    refetchInterval: LIVE_REFRESH_MS,
  });

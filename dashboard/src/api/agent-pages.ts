import { infiniteQueryOptions, keepPreviousData, queryOptions } from '@tanstack/react-query';
import type { Schema } from '@drover/shared/api';
import { api, apiPage, apiPath, type Page } from './client';
import { CHOICES, namesByIdQuery, nameText } from './names-by-id';
import { AGENT_DIRECTORY_REFRESH_MS, LIVE_REFRESH_MS } from './refresh';
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
      if (filters.selector) query.set('selector', filters.selector);
      if (filters.status) query.set('status', filters.status);
      if (filters.q) query.set('q', nameText(filters.q));
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

/**
 * The names of the agents of these ids, 200 a read (namesByIdQuery), refreshed as often as the
 * agents directory.
 */
export const agentNamesQuery = (orgId: string, ids: Iterable<string | null | undefined>) =>
  namesByIdQuery(orgId, 'agents', ids, AGENT_DIRECTORY_REFRESH_MS);

/**
 * How many agents a selector trigger runs on now: those its selector matches, revoked ones left out
 * (two counts the coordinator makes: `?selector=…&limit=1` and the same of status `revoked`), where
 * the triggers list matched every agent of the organization in the page before.
 */
export const selectorCountQuery = (orgId: string, selector: string) =>
  queryOptions({
    queryKey: ['orgs', orgId, 'agents', { selectorCount: selector }],
    queryFn: async (): Promise<number> => {
      const count = async (status?: string) => {
        const query = new URLSearchParams({ selector, limit: '1', ...(status ? { status } : {}) });
        return (await apiPage<Agent>(apiPath`/orgs/${orgId}/agents?${query}`)).total ?? 0;
      };
      const [matching, revoked] = await Promise.all([count(), count('revoked')]);
      return matching - revoked;
    },
    refetchInterval: AGENT_DIRECTORY_REFRESH_MS,
  });

/** The most agents a picker offers at once: more are found by typing more of the name. */
export const AGENT_PICKS = 20;

/**
 * The agents whose name or hostname holds `text` (every agent when it is empty), the AGENT_PICKS
 * most recently registered, with how many match in all: what a picker offers as it is typed.
 */
export const agentSearchQuery = (orgId: string, text: string) =>
  queryOptions({
    queryKey: ['orgs', orgId, 'agents', { search: text }],
    queryFn: () => {
      const query = new URLSearchParams({ limit: String(AGENT_PICKS), ...(text ? { q: nameText(text) } : {}) });
      return apiPage<Agent>(apiPath`/orgs/${orgId}/agents?${query}`);
    },
    placeholderData: keepPreviousData,
    refetchInterval: AGENT_DIRECTORY_REFRESH_MS,
  });

/** An agent offered as a choice, with the names of the workflows it reported. */
export interface AgentChoice extends Agent {
  workflows: string[];
}

/**
 * The CHOICES most recently registered agents whose name or hostname holds `text` (every agent
 * when it is empty), with their workflows' names and how many match: what the API token form and
 * an application's "Bind agents" offer, where they read every agent (and every workflow) of the
 * organization.
 */
export const agentChoicesQuery = (orgId: string, text: string) =>
  queryOptions({
    queryKey: ['orgs', orgId, 'agents', { choices: text }],
    queryFn: async (): Promise<Page<AgentChoice>> => {
      const query = new URLSearchParams({ limit: String(CHOICES), ...(text ? { q: nameText(text) } : {}) });
      const page = await apiPage<Agent>(apiPath`/orgs/${orgId}/agents?${query}`);
      const workflowsOf = new Map<string, string[]>();
      if (page.items.length > 0) {
        const ids = new URLSearchParams(page.items.map((agent) => ['agentId', agent.id]));
        for (const w of await api<Workflow[]>('GET', apiPath`/orgs/${orgId}/workflows?${ids}`)) {
          workflowsOf.set(w.agentId, [...(workflowsOf.get(w.agentId) ?? []), w.name]);
        }
      }
      return { ...page, items: page.items.map((agent) => ({ ...agent, workflows: workflowsOf.get(agent.id) ?? [] })) };
    },
    placeholderData: keepPreviousData,
    refetchInterval: AGENT_DIRECTORY_REFRESH_MS,
  });

/** What a trigger on a label selector would run on if called now (`selector-matches`). */
export type SelectorMatchesView = Schema<'SelectorMatches'>;

/**
 * The agents a label selector matches now (revoked ones aside: the first names, how many), those of
 * them lacking `workflowName`, the workflows they report and that workflow's versions, as the
 * coordinator works them out: what a selector trigger's page and form show as the selector is
 * typed, where they read every agent and every workflow of the organization (7.4 MB at 5,000
 * agents). `selector` must parse and select by something (the form says so before asking).
 */
export const selectorMatchesQuery = (orgId: string, selector: string, workflowName: string) =>
  queryOptions({
    queryKey: ['orgs', orgId, 'agents', { selectorMatches: selector, workflowName }],
    queryFn: () => {
      const query = new URLSearchParams({ selector, ...(workflowName ? { workflowName } : {}) });
      return api<SelectorMatchesView>('GET', apiPath`/orgs/${orgId}/selector-matches?${query}`);
    },
    placeholderData: keepPreviousData,
    refetchInterval: AGENT_DIRECTORY_REFRESH_MS,
  });

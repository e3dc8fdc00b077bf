import { matchesSelector, type Requirement } from '@drover/shared';
import type { Agent, AgentRepository, AgentStatus } from '../model/agents.js';
import { nameSearch } from '../../util/name-search.js';

/** What the agents list of an organization is narrowed to (docs/management.md, "Agents"). */
export interface AgentListFilter {
  /** A parsed label selector: only the agents whose labels it matches. */
  selector?: readonly Requirement[];
  status?: AgentStatus;
  /** Text the agent's name or hostname holds, in any case. */
  text?: string;
  /** Only the agents of these ids: those a page names (read by id, not among every agent). */
  ids?: readonly string[];
  /** The page's cursor: agents registered before the one of this number. */
  before?: number;
  /** At most this many agents; none: every one that matches. */
  limit?: number;
}

export interface AgentListPage {
  /** The page's agents, most recently registered first. */
  agents: Agent[];
  /** How many agents match the filter, on every page. */
  matching: number;
  /** The registration number of the page's last agent when more match after it, else null. */
  next: number | null;
}

/**
 * A page of the organization's agents that match the filter. The selector and the text are matched
 * here, on the organization's agents as read (labels are JSON in the database): an organization of
 * 5,000 agents is read in a few milliseconds, and a page of them is what goes over the wire and is
 * drawn, where every agent went every few seconds before. With `ids`, only those agents are read
 * (the names of the agents a page of jobs, triggers or audit entries shows).
 */
export async function listAgents(
  repo: Pick<AgentRepository, 'listByOrg' | 'listByIds'>,
  orgId: string,
  filter: AgentListFilter = {},
): Promise<AgentListPage> {
  const named = nameSearch(filter.text);
  const matches = (agent: Agent) =>
    (filter.status === undefined || agent.status === filter.status) &&
    (!named || named(agent.name, agent.hostname)) &&
    (!filter.selector?.length || matchesSelector(filter.selector, agent.labels));
  const read = filter.ids === undefined ? await repo.listByOrg(orgId) : await repo.listByIds(orgId, filter.ids);
  const all = read.filter(matches);
  const { before, limit } = filter;
  const from = before === undefined ? 0 : all.findIndex((agent) => agent.seq < before);
  const rest = from < 0 ? [] : all.slice(from);
  if (limit === undefined || rest.length <= limit) return { agents: rest, matching: all.length, next: null };
  const agents = rest.slice(0, limit);
  return { agents, matching: all.length, next: agents[agents.length - 1]!.seq };
}

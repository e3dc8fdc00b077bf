import type { Schema } from '@drover/shared/api';
import type { Caller } from './callers.js';
import { ApiError } from './errors.js';
import { selectLocally, selectorRefusal } from './labels/selector.js';
import { shortId } from '@drover/shared';

/** An agent as `GET /v1/agents` (an API token) and `GET /v1/orgs/:orgId/agents` (a session) answer it. */
export type Agent = Schema<'Agent'>;

/**
 * The agents the caller reaches: an API token's (`GET /v1/agents`), else the organization's; with
 * a label `selector`, those it matches (the coordinator selects the organization's; an API token's
 * are selected here, by the same rules, as `GET /v1/agents` takes no selector).
 */
export async function listAgents(caller: Caller, selector?: string): Promise<Agent[]> {
  if (caller.kind === 'token') {
    const agents = await caller.api.get<Agent[]>('/agents');
    return selector === undefined ? agents : selectLocally(agents, selector);
  }
  const path = `/orgs/${await caller.orgId()}/agents`;
  try {
    return await caller.api.get<Agent[]>(path, { selector });
  } catch (error) {
    throw selector === undefined ? error : selectorRefusal(error, selector);
  }
}

/**
 * How a table names an agent: its name, with the start of its id when another agent has the same
 * name; its id when the caller cannot list it (or listing is refused: a rate limit, say, since
 * the table itself was answered).
 */
export async function agentNamer(caller: Caller): Promise<(agentId: string) => string> {
  let agents: Agent[];
  try {
    agents = await listAgents(caller);
  } catch (error) {
    if (error instanceof ApiError) return (agentId) => agentId;
    throw error;
  }
  const named = new Map(agents.map((a) => [a.id, a.name]));
  const uses = new Map<string, number>();
  for (const a of agents) uses.set(a.name, (uses.get(a.name) ?? 0) + 1);
  return (agentId) => {
    const name = named.get(agentId);
    if (name === undefined) return agentId;
    return uses.get(name)! > 1 ? `${name} (${shortId(agentId)})` : name;
  };
}

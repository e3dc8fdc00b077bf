import type { Schema } from '@drover/shared/api';
import type { Caller, SessionCaller } from './callers.js';
import { ApiError, CliError } from './errors.js';
import { selectorRefusal } from './labels/selector.js';
import { shortId } from '@drover/shared';

/** An agent as `GET /v1/agents` (an API token) and `GET /v1/orgs/:orgId/agents` (a session) answer it. */
export type Agent = Schema<'Agent'>;

/**
 * Why a label selector needs a session: an API token's `GET /v1/agents` (the public discovery)
 * takes no selector and shows no labels, so nothing could be selected by them.
 */
export const SELECTOR_NEEDS_SESSION =
  '--selector needs a session, as the agents an API token lists (GET /v1/agents) show no labels: ' +
  'sign in with `drover login` and leave out the API token (--token, DROVER_TOKEN)';

/**
 * The agents the caller reaches: an API token's (`GET /v1/agents`), else the organization's; with
 * a label `selector`, those it matches, selected by the coordinator (a session only: an API
 * token's agents come without their labels, SELECTOR_NEEDS_SESSION).
 */
export async function listAgents(caller: Caller, selector?: string): Promise<Agent[]> {
  if (caller.kind === 'token') {
    if (selector !== undefined) throw new CliError(SELECTOR_NEEDS_SESSION);
    return caller.api.get<Agent[]>('/agents');
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

/** The most agent ids one read of the organization's agents names (`?id=`, the coordinator's bound). */
const IDS_PER_READ = 200;

/**
 * As agentNamer, for the agents of `ids` only: read by id (`GET /v1/orgs/:orgId/agents?id=…`), not
 * a fleet's thousands read to name the few a table shows; a coordinator older than `id` refuses it
 * (422), and every agent is read instead.
 */
export async function agentNamerFor(
  caller: SessionCaller,
  ids: Iterable<string>,
): Promise<(agentId: string) => string> {
  const wanted = [...new Set(ids)];
  const agents: Agent[] = [];
  try {
    for (let i = 0; i < wanted.length; i += IDS_PER_READ) {
      const query = new URLSearchParams(wanted.slice(i, i + IDS_PER_READ).map((id): [string, string] => ['id', id]));
      agents.push(...(await caller.api.get<Agent[]>(`/orgs/${await caller.orgId()}/agents?${query.toString()}`)));
    }
  } catch (error) {
    if (error instanceof ApiError && error.status === 422) return agentNamer(caller);
    throw error;
  }
  const named = new Map(agents.map((a) => [a.id, a.name]));
  return (agentId) => named.get(agentId) ?? agentId;
}

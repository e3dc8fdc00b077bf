import type { Schema } from '@drover/shared/api';
import type { Caller } from './callers.js';
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
 * How a table names an agent: its name, with the end of its id when another agent of those read
 * has the same name; its id when the caller cannot list it (or listing is refused: a rate limit,
 * say, since the table itself was answered).
 */
export async function agentNamer(caller: Caller): Promise<(agentId: string) => string> {
  try {
    return namerOf(await listAgents(caller));
  } catch (error) {
    if (error instanceof ApiError) return (agentId) => agentId;
    throw error;
  }
}

/** The most agent ids one read of the organization's agents names (`?id=`, the coordinator's bound). */
const IDS_PER_READ = 200;

/**
 * As agentNamer, for the agents of `ids` only: with a session and at most 200 of them, read by id
 * (`GET /v1/orgs/:orgId/agents?id=…`), not a fleet's thousands read to name the few a table shows;
 * more of them (a table over much of the fleet), an API token's, or a coordinator older than `id`
 * (which refuses it, 422): every agent the caller reaches, in one read.
 */
export async function agentNamerFor(caller: Caller, ids: Iterable<string>): Promise<(agentId: string) => string> {
  const wanted = [...new Set(ids)];
  if (caller.kind === 'token' || wanted.length > IDS_PER_READ) return agentNamer(caller);
  if (wanted.length === 0) return (agentId) => agentId;
  const query = new URLSearchParams(wanted.map((id): [string, string] => ['id', id]));
  try {
    return namerOf(await caller.api.get<Agent[]>(`/orgs/${await caller.orgId()}/agents?${query.toString()}`));
  } catch (error) {
    if (error instanceof ApiError && error.status === 422) return agentNamer(caller);
    if (error instanceof ApiError) return (agentId) => agentId;
    throw error;
  }
}

/** Names by id from the agents read, a name two of them share told apart by the end of the id (shortId). */
function namerOf(agents: Agent[]): (agentId: string) => string {
  const named = new Map(agents.map((a) => [a.id, a.name]));
  const uses = new Map<string, number>();
  for (const a of agents) uses.set(a.name, (uses.get(a.name) ?? 0) + 1);
  return (agentId) => {
    const name = named.get(agentId);
    if (name === undefined) return agentId;
    return uses.get(name)! > 1 ? `${name} (${shortId(agentId)})` : name;
  };
}

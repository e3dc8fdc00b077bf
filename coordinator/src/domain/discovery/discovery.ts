import type { Agent, AgentRepository } from '../model/agents.js';
import type { ApiToken } from '../model/api-tokens.js';
import type { Trigger, TriggerRepository } from '../model/triggers.js';
import type { Workflow, WorkflowRepository } from '../model/workflows.js';
import { findGrant } from '../tokens/grants.js';
import { selectAgents } from '../agents/agent-labels.js';
import { parseSelector } from '@drover/shared';

/**
 * Token discovery (docs/management.md, "API tokens and grants"): which agents and workflows a token's grants reach.
 *
 * | grant                               | agents              | workflows                         |
 * |-------------------------------------|---------------------|-----------------------------------|
 * | agent                               | the listed agents   | all active workflows of them      |
 * | trigger, scopeType `agent`          | the trigger's agent | all active workflows of it        |
 * | trigger, scopeType `workflow`       | the trigger's agent | that one workflow, when active    |
 * | trigger on a label selector         | the agents it selects now | that workflow on each of them |
 * | storage only                        | none                | none                              |
 *
 * Grants combine as a union without duplicates. Only agents of the token's organization count,
 * deleted triggers and triggers that are no longer webhook triggers give nothing, removed
 * workflows are never listed, and a revoked agent is not reachable: it and its workflows are
 * left out (it can run nothing; see docs/decisions.md).
 */

export interface DiscoveryRepositories {
  agents: Pick<AgentRepository, 'listByIds' | 'listByOrg'>;
  workflows: Pick<WorkflowRepository, 'listActiveByAgents' | 'listActiveNamedByAgents'>;
  triggers: Pick<TriggerRepository, 'listByIds'>;
}

type TokenGrants = Pick<ApiToken, 'orgId' | 'scopes'>;

/** Agents reachable by the token, most recently registered first. */
export async function reachableAgents(repos: DiscoveryRepositories, token: TokenGrants): Promise<Agent[]> {
  const agentIds = findGrant(token.scopes, 'agent')?.agentIds ?? [];
  const triggers = await targetsOf(repos, token.orgId, await grantedTriggers(repos, token));
  if (triggers.length === 0) return liveAgents(repos, token.orgId, agentIds);
  return liveAgents(repos, token.orgId, unique([...agentIds, ...triggers.map((t) => t.agentId)]));
}

/** Workflows the token can run, ascending by name (then agent id). */
export async function runnableWorkflows(repos: DiscoveryRepositories, token: TokenGrants): Promise<Workflow[]> {
  const grantedAgentIds = findGrant(token.scopes, 'agent')?.agentIds ?? [];
  const triggers = await targetsOf(repos, token.orgId, await grantedTriggers(repos, token));

  // Agents whose whole workflow set is reachable, and single workflows named by triggers.
  const wholeAgentIds = new Set(grantedAgentIds);
  const single: { agentId: string; name: string }[] = [];
  for (const trigger of triggers) {
    if (trigger.scopeType === 'agent') wholeAgentIds.add(trigger.agentId);
    else if (trigger.workflowName !== null) single.push({ agentId: trigger.agentId, name: trigger.workflowName });
  }
  const candidateAgentIds = unique([...wholeAgentIds, ...single.map((s) => s.agentId)]);
  if (candidateAgentIds.length === 0) return [];

  // One query keeps other organizations' and revoked agents out of everything below.
  const live = new Set((await liveAgents(repos, token.orgId, candidateAgentIds)).map((a) => a.id));
  const wholeLive = [...wholeAgentIds].filter((id) => live.has(id));
  const workflows = await repos.workflows.listActiveByAgents(wholeLive);
  const singleLive = single.filter((s) => live.has(s.agentId) && !wholeAgentIds.has(s.agentId));
  if (singleLive.length === 0) return workflows; // already ascending by name, then agent id

  // One query per workflow name, whatever the number of agents a selector trigger names it on.
  const agentsByName = new Map<string, Set<string>>();
  for (const { agentId, name } of singleLive) {
    const agentIds = agentsByName.get(name) ?? new Set<string>();
    agentsByName.set(name, agentIds.add(agentId));
  }
  const seen = new Set(workflows.map((w) => w.id));
  for (const [name, agentIds] of agentsByName) {
    for (const workflow of await repos.workflows.listActiveNamedByAgents(name, [...agentIds])) {
      if (!seen.has(workflow.id)) {
        seen.add(workflow.id);
        workflows.push(workflow);
      }
    }
  }
  return workflows.sort(byNameThenAgent);
}

/**
 * The granted triggers the token can run: webhook triggers. A grant cannot name a cron or chat
 * trigger, but a webhook trigger may have been turned into one since; like a deleted trigger, it
 * then gives nothing (its run is refused with 403).
 */
async function grantedTriggers(repos: DiscoveryRepositories, token: TokenGrants): Promise<Trigger[]> {
  const triggerIds = findGrant(token.scopes, 'trigger')?.triggerIds ?? [];
  if (triggerIds.length === 0) return [];
  return (await repos.triggers.listByIds(token.orgId, triggerIds)).filter((t) => t.type === 'webhook');
}

/** Each trigger with each agent it runs on: its agent, or every agent its selector matches now. */
async function targetsOf(
  repos: DiscoveryRepositories,
  orgId: string,
  triggers: readonly Trigger[],
): Promise<(Trigger & { agentId: string })[]> {
  const all = triggers.some((t) => t.agentSelector !== null) ? await repos.agents.listByOrg(orgId) : [];
  return triggers.flatMap((t) =>
    t.agentSelector === null
      ? t.agentId === null
        ? []
        : [{ ...t, agentId: t.agentId }]
      : selectAgents(all, parseSelector(t.agentSelector)).map((agent) => ({ ...t, agentId: agent.id })),
  );
}

async function liveAgents(repos: DiscoveryRepositories, orgId: string, ids: readonly string[]): Promise<Agent[]> {
  if (ids.length === 0) return [];
  const agents = await repos.agents.listByIds(orgId, ids);
  return agents.some((a) => a.status === 'revoked') ? agents.filter((a) => a.status !== 'revoked') : agents;
}

function unique(ids: readonly string[]): string[] {
  return [...new Set(ids)];
}

/** The order of SQL `ORDER BY name, agent_id` (names and ids are ASCII, so code units = bytes). */
function byNameThenAgent(a: Workflow, b: Workflow): number {
  if (a.name !== b.name) return a.name < b.name ? -1 : 1;
  if (a.agentId !== b.agentId) return a.agentId < b.agentId ? -1 : 1;
  return 0;
}

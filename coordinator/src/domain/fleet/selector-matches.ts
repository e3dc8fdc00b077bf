import type { Requirement } from '@drover/shared';
import type { AgentRepository } from '../model/agents.js';
import type { Workflow, WorkflowRepository } from '../model/workflows.js';
import { selectAgents } from '../agents/agent-labels.js';
import { byteOrder } from '../../util/byte-order.js';

/**
 * What a label selector trigger would run on if called now (docs/fleets.md, "Selectors"): the
 * agents its selector matches, revoked ones left out, which of them lack its workflow, and the
 * workflows they report. What the trigger's page and form show as the selector is typed, where
 * they read every agent and every workflow of the organization (7.4 MB at 5,000 agents).
 */

/** The most names a list of names gives: the rest are counted. */
export const MATCH_NAMES = 12;
/** The most workflow names offered. */
export const MATCH_WORKFLOW_NAMES = 500;

export interface SelectorMatches {
  /** Agents the selector matches, revoked ones aside. */
  matching: number;
  /** The first MATCH_NAMES of their names, in byte order. */
  names: string[];
  /** Those of them that do not report `workflowName` (0 without one). */
  lacking: number;
  lackingNames: string[];
  /** The names of the workflows they report, each once, in byte order (at most MATCH_WORKFLOW_NAMES). */
  workflowNames: string[];
  /** `workflowName` as they report it: one of each distinct params schema. */
  versions: Workflow[];
}

export async function selectorMatches(
  repos: { agents: Pick<AgentRepository, 'listByOrg'>; workflows: Pick<WorkflowRepository, 'listByOrg'> },
  orgId: string,
  selector: readonly Requirement[],
  workflowName: string | undefined,
): Promise<SelectorMatches> {
  const agents = selectAgents(
    (await repos.agents.listByOrg(orgId)).filter((a) => a.status !== 'revoked'),
    selector,
  ).sort((a, b) => byteOrder(a.name, b.name) || byteOrder(a.id, b.id));
  const ids = new Set(agents.map((a) => a.id));
  const workflows = ids.size === 0 ? [] : (await repos.workflows.listByOrg(orgId)).filter((w) => ids.has(w.agentId));
  const named = workflowName ? workflows.filter((w) => w.name === workflowName) : [];
  const reporting = new Set(named.map((w) => w.agentId));
  const lacking = workflowName ? agents.filter((a) => !reporting.has(a.id)) : [];
  const versions = new Map<string, Workflow>();
  for (const w of named) {
    const schema = JSON.stringify(w.paramsSchema ?? []);
    if (!versions.has(schema)) versions.set(schema, w);
  }
  return {
    matching: agents.length,
    names: agents.slice(0, MATCH_NAMES).map((a) => a.name),
    lacking: lacking.length,
    lackingNames: lacking.slice(0, MATCH_NAMES).map((a) => a.name),
    workflowNames: [...new Set(workflows.map((w) => w.name))].sort(byteOrder).slice(0, MATCH_WORKFLOW_NAMES),
    versions: [...versions.values()],
  };
}

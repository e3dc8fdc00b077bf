import {
  BUILT_IN_LABELS,
  labelProblems,
  matchesSelector,
  parseSelector,
  SelectorError,
  type Labels,
  type Requirement,
} from '@drover/shared';
import { isDeepStrictEqual } from 'node:util';
import { validationFailed } from '../../errors.js';
import type { Agent, AgentRepository } from '../model/agents.js';
import type { DeviceGroupService } from '../ota/device-groups.js';

/** The device groups an agent's labels decide (docs/ota.md, "Device groups"). */
export type DeviceGroups = Pick<DeviceGroupService, 'agentsChanged'>;

/**
 * Agent labels (docs/fleets.md): the agent reports its own when it connects, operators set theirs,
 * and the agent carries both, an operator's winning a clash. Every change goes through here.
 */

/** Refuses labels that break the rules (422 naming each label under `path`). */
export function checkLabels(labels: unknown, path: string): asserts labels is Labels {
  const problems = labelProblems(labels, path);
  if (problems.length > 0) throw validationFailed(problems);
}

/** Sorted by key: the order labels are stored and shown in. */
export const sorted = (labels: Labels): Record<string, string> =>
  Object.fromEntries(
    Object.keys(labels)
      .sort()
      .map((key) => [key, labels[key]!]),
  );

/**
 * The labels an agent reports of itself replace those it reported before. An agent always reports
 * `os` and `arch`; one that leaves them out is refused, so a selector on them never misses an agent
 * by accident (agents of versions before labels report nothing and keep none). Labels that changed
 * move the agent into or out of the applications' device groups.
 */
export async function reportLabels(
  deps: { agents: AgentRepository; deviceGroups: DeviceGroups },
  agent: Agent,
  labels: unknown,
): Promise<Agent> {
  checkLabels(labels, 'body.labels');
  const missing = BUILT_IN_LABELS.filter((key) => !Object.hasOwn(labels, key));
  if (missing.length > 0) {
    throw validationFailed(missing.map((key) => ({ path: `body.labels.${key}`, message: 'an agent reports its own' })));
  }
  if (isDeepStrictEqual(sorted(labels), agent.reportedLabels)) return agent;
  const updated = (await deps.agents.setReportedLabels(agent.id, sorted(labels))) ?? agent;
  await deps.deviceGroups.agentsChanged(agent.orgId, [agent.id], { actorType: 'agent', actorId: agent.id });
  return updated;
}

/** A selector from a request, parsed; a bad one is 422 naming `path` and the position of the error. */
export function selectorFrom(source: string, path: string): Requirement[] {
  try {
    return parseSelector(source);
  } catch (error) {
    if (error instanceof SelectorError) {
      throw validationFailed([{ path, message: `not a label selector: ${error.message}` }]);
    }
    throw error;
  }
}

/** Why a trigger's selector with no requirement (empty, or only spaces) is refused. */
export const NO_REQUIREMENT =
  'must select by at least one label (to reach every agent, select one they all have, such as `os`)';

/** A trigger's selector, as `selectorFrom`, with at least one requirement (422 otherwise). */
export function triggerSelectorFrom(source: string, path: string): Requirement[] {
  const requirements = selectorFrom(source, path);
  if (requirements.length === 0) throw validationFailed([{ path, message: NO_REQUIREMENT }]);
  return requirements;
}

/** The agents whose labels meet `selector`. */
export const selectAgents = (agents: readonly Agent[], selector: readonly Requirement[]): Agent[] =>
  selector.length === 0 ? [...agents] : agents.filter((agent) => matchesSelector(selector, agent.labels));

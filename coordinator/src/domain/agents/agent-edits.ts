import { labelKeyProblem, labelProblems, type Requirement } from '@drover/shared';
import { isDeepStrictEqual } from 'node:util';
import { AppError, conflict, notFound, validationFailed } from '../../errors.js';
import { userAction, type AuditLog, type UserActor } from '../audit/audit-log.js';
import type { Agent, AgentEdit, AgentRepository } from '../model/agents.js';
import { cleanName } from '../names.js';
import { checkLabels, selectAgents, sorted, type DeviceGroups } from './agent-labels.js';

/** What an operator changes of an agent, as a request gives it: each field when given. */
export interface AgentChange {
  name?: string;
  /** Replaces the operators' labels as a whole ({} removes them). */
  labels?: unknown;
}

/** How many times a change without `If-Match` is made again onto an agent others changed meanwhile. */
const EDIT_ATTEMPTS = 5;

/** The 412 of a change made from an agent that was changed since (`If-Match`). */
const changedSince = (current: Agent): AppError =>
  new AppError(
    'precondition_failed',
    `The agent was changed since the version this change was made from (revision ${current.revision} now): read it again`,
    { details: { revision: current.revision } },
  );

/**
 * An operator renames an agent or replaces its operators' labels as a whole (docs/fleets.md), in
 * one write that counts one revision. `ifVersion`: the revision the caller's change was made from
 * (a PATCH's `If-Match`): an agent changed since is refused with 412 and left as it is; without
 * it, a change made alongside another is made again onto the agent as that one left it. Each
 * change is audited (`agent.rename`, `agent.labels`); labels that changed move the agent into or
 * out of the applications' device groups.
 */
export async function editAgent(
  deps: { agents: AgentRepository; audit: AuditLog; deviceGroups: DeviceGroups },
  actor: UserActor,
  agentId: string,
  change: AgentChange,
  ifVersion?: string,
): Promise<Agent> {
  const name = change.name === undefined ? undefined : cleanName('body.name', change.name);
  let labels: Record<string, string> | undefined;
  if (change.labels !== undefined) {
    checkLabels(change.labels, 'body.labels');
    labels = sorted(change.labels);
  }
  for (let attempt = 1; ; attempt++) {
    const before = await deps.agents.findInOrg(actor.orgId, agentId);
    if (!before) throw notFound('Agent');
    if (ifVersion !== undefined && String(before.revision) !== ifVersion) throw changedSince(before);
    const edit: AgentEdit = {};
    if (name !== undefined && name !== before.name) edit.name = name;
    if (labels !== undefined && !isDeepStrictEqual(labels, before.operatorLabels)) edit.operatorLabels = labels;
    if (edit.name === undefined && edit.operatorLabels === undefined) return before;
    const agent = await deps.agents.edit(actor.orgId, before.id, before.revision, edit);
    if (agent === null) throw notFound('Agent');
    if (agent === 'changed') {
      if (ifVersion !== undefined) {
        const now = await deps.agents.findInOrg(actor.orgId, agentId);
        throw now ? changedSince(now) : notFound('Agent');
      }
      if (attempt === EDIT_ATTEMPTS) {
        throw conflict(
          'The agent was changed by other requests at the same time, again and again: send the change again',
        );
      }
      continue;
    }
    // Both audited before the device groups are evaluated: a failure there leaves no change unaudited.
    if (edit.operatorLabels !== undefined) {
      await deps.audit.record(
        userAction(actor, 'agent.labels', 'agent', agent.id, { from: before.operatorLabels, to: agent.operatorLabels }),
      );
    }
    if (edit.name !== undefined) {
      await deps.audit.record(
        userAction(actor, 'agent.rename', 'agent', agent.id, { from: before.name, to: agent.name }),
      );
    }
    if (edit.operatorLabels !== undefined) {
      await deps.deviceGroups.agentsChanged(actor.orgId, [agent.id], { actorType: 'user', actorId: actor.userId });
    }
    return agent;
  }
}

/** What an operator changes of the operators' labels of many agents: keys set, keys removed. */
export interface LabelChange {
  /** The labels to set (a key the agent has gets the value). */
  set: Record<string, string>;
  /** The keys to remove. */
  remove: string[];
}

/** An agent a label change changes (or would): its operators' labels before and after. */
export interface Relabelled {
  id: string;
  name: string;
  from: Record<string, string>;
  to: Record<string, string>;
}

/** Agents relabelled at the same time by one change of many. */
const RELABEL_AT_ONCE = 32;

/** `labels` with `change` made, sorted; the same object's contents when it changes nothing. */
const changed = (labels: Record<string, string>, change: LabelChange): Record<string, string> => {
  const next: Record<string, string> = { ...labels, ...change.set };
  for (const key of change.remove) delete next[key];
  return sorted(next);
};

/** Refuses a change whose keys or values break the rules, or that sets and removes one key (422). */
function checkChange(change: LabelChange): void {
  const problems = labelProblems(change.set, 'body.set');
  change.remove.forEach((key, i) => {
    const problem = labelKeyProblem(key);
    if (problem) problems.push({ path: `body.remove.${i}`, message: problem });
    else if (Object.hasOwn(change.set, key)) {
      problems.push({ path: `body.remove.${i}`, message: `the label ${key} is both set and removed` });
    }
  });
  if (Object.keys(change.set).length === 0 && change.remove.length === 0) {
    problems.push({ path: 'body', message: 'set or remove at least one label' });
  }
  if (problems.length > 0) throw validationFailed(problems);
}

/**
 * An operator changes the operators' labels of every agent a selector matches (revoked ones left
 * out; docs/fleets.md, "Setting them"): each agent's change is written onto its revision and made
 * again onto its labels as they are when another change came in between, and audited as that
 * agent's `agent.labels` (with the selector). Every agent's labels after the change are checked
 * first: one that would carry more than 32 is a 422 naming it, and nothing is changed. The agents
 * changed move into or out of the applications' device groups, in one pass. `dryRun`: what would
 * change, changing nothing.
 */
export async function relabelMatching(
  deps: { agents: AgentRepository; audit: AuditLog; deviceGroups: DeviceGroups },
  actor: UserActor,
  selector: { source: string; requirements: readonly Requirement[] },
  change: LabelChange,
  dryRun: boolean,
): Promise<{ matching: number; agents: Relabelled[] }> {
  checkChange(change);
  const matching = selectAgents(await deps.agents.listByOrg(actor.orgId), selector.requirements).filter(
    (agent) => agent.status !== 'revoked',
  );
  const planned: Relabelled[] = [];
  for (const agent of matching) {
    const to = changed(agent.operatorLabels, change);
    if (isDeepStrictEqual(to, agent.operatorLabels)) continue;
    const problem = labelProblems(to, 'labels').find((p) => p.path === 'labels');
    if (problem) {
      throw validationFailed([
        { path: 'body.set', message: `the agent ${agent.name} (${agent.id}) would carry ${problem.message}` },
      ]);
    }
    planned.push({ id: agent.id, name: agent.name, from: agent.operatorLabels, to });
  }
  if (dryRun) return { matching: matching.length, agents: planned };
  const done: Relabelled[] = [];
  try {
    // Some at a time, so that the writes and audit entries of a fleet share their commits.
    for (let i = 0; i < planned.length; i += RELABEL_AT_ONCE) {
      const turn = planned.slice(i, i + RELABEL_AT_ONCE);
      const settled = await Promise.allSettled(
        turn.map((plan) => relabelOne(deps, actor, plan.id, change, selector.source)),
      );
      for (const result of settled) if (result.status === 'fulfilled' && result.value) done.push(result.value);
      const failed = settled.find((result) => result.status === 'rejected');
      if (failed) throw failed.reason;
    }
  } finally {
    // The device groups follow every matching agent that has the labels now, also when the change
    // stopped halfway: the agents it changed, and those that had the labels already (a change made
    // again after one that stopped before this pass moves those it had changed).
    const changedIds = new Set(done.map((a) => a.id));
    const plannedIds = new Set(planned.map((a) => a.id));
    const ids = matching.filter((a) => changedIds.has(a.id) || !plannedIds.has(a.id)).map((a) => a.id);
    if (ids.length > 0) {
      await deps.deviceGroups.agentsChanged(actor.orgId, ids, { actorType: 'user', actorId: actor.userId });
    }
  }
  return { matching: matching.length, agents: done };
}

/** One agent's labels changed onto its revision, again onto a later one; null when there is nothing (left) to change. */
async function relabelOne(
  deps: { agents: AgentRepository; audit: AuditLog },
  actor: UserActor,
  agentId: string,
  change: LabelChange,
  selector: string,
): Promise<Relabelled | null> {
  for (let attempt = 1; ; attempt++) {
    const before = await deps.agents.findInOrg(actor.orgId, agentId);
    if (!before || before.status === 'revoked') return null;
    const to = changed(before.operatorLabels, change);
    if (isDeepStrictEqual(to, before.operatorLabels)) return null;
    checkLabels(to, 'body.set');
    const agent = await deps.agents.edit(actor.orgId, agentId, before.revision, { operatorLabels: to });
    if (agent === null) return null;
    if (agent === 'changed') {
      if (attempt === EDIT_ATTEMPTS) {
        throw conflict(
          `The agent ${before.name} was changed by other requests at the same time, again and again: send the change again`,
        );
      }
      continue;
    }
    await deps.audit.record(
      userAction(actor, 'agent.labels', 'agent', agent.id, { from: before.operatorLabels, to, selector }),
    );
    return { id: agent.id, name: agent.name, from: before.operatorLabels, to };
  }
}

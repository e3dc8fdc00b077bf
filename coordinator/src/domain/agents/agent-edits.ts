import { isDeepStrictEqual } from 'node:util';
import { AppError, conflict, notFound } from '../../errors.js';
import { userAction, type AuditLog, type UserActor } from '../audit/audit-log.js';
import type { Agent, AgentEdit, AgentRepository } from '../model/agents.js';
import { cleanName } from '../names.js';
import { checkLabels, sorted, type DeviceGroups } from './agent-labels.js';

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
    if (edit.operatorLabels !== undefined) {
      await deps.audit.record(
        userAction(actor, 'agent.labels', 'agent', agent.id, { from: before.operatorLabels, to: agent.operatorLabels }),
      );
      await deps.deviceGroups.agentsChanged(actor.orgId, [agent.id], { actorType: 'user', actorId: actor.userId });
    }
    if (edit.name !== undefined) {
      await deps.audit.record(
        userAction(actor, 'agent.rename', 'agent', agent.id, { from: before.name, to: agent.name }),
      );
    }
    return agent;
  }
}

import type { AgentRepository } from '../model/agents.js';
import type { ChangeCounterRepository } from '../model/change-counter.js';
import type { TriggerRepository } from '../model/triggers.js';
import type { Workflow, WorkflowRepository } from '../model/workflows.js';
import { GenerationCache } from '../generation-cache.js';
import type { RunTargetState } from './request.js';

export interface RunTargetRepositories {
  changeCounter: Pick<ChangeCounterRepository, 'generation'>;
  triggers: Pick<TriggerRepository, 'findInOrg'>;
  agents: Pick<AgentRepository, 'findById'>;
  workflows: Pick<WorkflowRepository, 'findActiveByAgentAndName'>;
}

/** A trigger as a run sees it, and the workflows of its agent looked up through it. */
export interface RunTarget extends RunTargetState {
  /** The active (reported, not removed) workflow of that name on the trigger's agent, or null. */
  workflow(name: string): Promise<Workflow | null>;
}

/** Workflow names remembered per trigger entry (callers of agent-scoped triggers choose the name). */
const MAX_WORKFLOWS_PER_TRIGGER = 64;

/**
 * The trigger (with its agent's revocation) and the workflows a run names, kept in memory
 * exactly (GenerationCache: any write to triggers, agents or workflows, workflow limits
 * included, drops every entry), so the hot path of a trigger run reads no configuration row and
 * checks the change counter once. A workflow is remembered in its trigger's entry, i.e. for the
 * generation the trigger was read at. Entries are shared between requests: never mutate them.
 */
export class RunTargets {
  private readonly triggers: GenerationCache<RunTarget>;

  constructor(
    private readonly repos: RunTargetRepositories,
    maxEntries = 10_000,
  ) {
    this.triggers = new GenerationCache(repos.changeCounter, maxEntries);
  }

  /**
   * The trigger of the organization (deleted ones are never found), or null. `generation`: the
   * change counter as the caller already read it for this request (see GenerationCache.get).
   */
  trigger(orgId: string, triggerId: string, generation?: number): Promise<RunTarget | null> {
    return this.triggers.get(
      `${orgId}\n${triggerId}`,
      async () => {
        const trigger = await this.repos.triggers.findInOrg(orgId, triggerId);
        if (!trigger) return null;
        const agent = await this.repos.agents.findById(trigger.agentId);
        const workflows = new Map<string, Workflow | null>();
        const { repos } = this;
        return {
          trigger,
          agentRevoked: agent === null || agent.status === 'revoked',
          async workflow(name) {
            const known = workflows.get(name);
            if (known !== undefined) return known;
            const found = await repos.workflows.findActiveByAgentAndName(trigger.agentId, name);
            if (workflows.size < MAX_WORKFLOWS_PER_TRIGGER) workflows.set(name, found);
            return found;
          },
        };
      },
      generation,
    );
  }
}

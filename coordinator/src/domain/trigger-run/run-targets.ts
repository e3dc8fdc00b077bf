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

/** Workflow names remembered per agent entry (callers of agent-scoped triggers choose the name). */
const MAX_WORKFLOWS_PER_AGENT = 256;

/** An agent as the runs of its triggers see it: revoked or not, and its workflows by name. */
interface AgentTarget {
  revoked: boolean;
  workflow(name: string): Promise<Workflow | null>;
}

/**
 * The trigger (with its agent's revocation) and the workflows a run names, kept in memory
 * exactly (GenerationCache: any write to triggers, agents or workflows, workflow limits
 * included, drops every entry), so the hot path of a trigger run reads no configuration row and
 * checks the change counter once. An agent and each of its workflows are read once per
 * generation and shared by all its triggers, and lookups in flight are shared too: a schedule
 * firing 10,000 triggers of one agent at once reads the agent and the workflow once, not 10,000
 * times. Entries are shared between requests: never mutate them.
 */
export class RunTargets {
  private readonly triggers: GenerationCache<RunTarget>;
  /** The agents of one generation, as promises so that concurrent lookups share one read. */
  private agents = { generation: Number.NaN, byId: new Map<string, Promise<AgentTarget>>() };

  constructor(
    private readonly repos: RunTargetRepositories,
    private readonly maxEntries = 10_000,
  ) {
    this.triggers = new GenerationCache(repos.changeCounter, maxEntries);
  }

  /**
   * The trigger of the organization (deleted ones are never found), or null. `generation`: the
   * change counter as the caller already read it for this request (see GenerationCache.get).
   */
  async trigger(orgId: string, triggerId: string, generation?: number): Promise<RunTarget | null> {
    const at = generation ?? (await this.repos.changeCounter.generation());
    return this.triggers.get(
      `${orgId}\n${triggerId}`,
      async () => {
        const trigger = await this.repos.triggers.findInOrg(orgId, triggerId);
        if (!trigger) return null;
        // A trigger on a label selector runs on the agents it selects at each call (domain/fleet/).
        if (trigger.agentId === null) return { trigger, agentRevoked: false, workflow: async () => null };
        const agent = await this.agent(trigger.agentId, at);
        return { trigger, agentRevoked: agent.revoked, workflow: agent.workflow };
      },
      at,
    );
  }

  /** The agent as of `generation`, read once per generation (as GenerationCache keeps entries). */
  private agent(agentId: string, generation: number): Promise<AgentTarget> {
    // A lookup for an older generation than the one kept: answer it from the database as of now.
    if (generation < this.agents.generation) return this.loadAgent(agentId);
    if (generation !== this.agents.generation || this.agents.byId.size >= this.maxEntries) {
      this.agents = { generation, byId: new Map() };
    }
    const { byId } = this.agents;
    let agent = byId.get(agentId);
    if (!agent) {
      agent = this.loadAgent(agentId);
      byId.set(agentId, agent);
      agent.catch(() => byId.delete(agentId));
    }
    return agent;
  }

  private async loadAgent(agentId: string): Promise<AgentTarget> {
    const { repos } = this;
    const agent = await repos.agents.findById(agentId);
    const workflows = new Map<string, Promise<Workflow | null>>();
    return {
      revoked: agent === null || agent.status === 'revoked',
      workflow(name) {
        const known = workflows.get(name);
        if (known) return known;
        const found = repos.workflows.findActiveByAgentAndName(agentId, name);
        if (workflows.size < MAX_WORKFLOWS_PER_AGENT) {
          workflows.set(name, found);
          found.catch(() => workflows.delete(name));
        }
        return found;
      },
    };
  }
}

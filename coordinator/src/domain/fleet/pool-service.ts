import { matchesSelector, parseSelector, type Requirement } from '@drover/shared';
import { DEFAULT_AGENT_QUEUE_CAPACITY } from '../agents/stream-registry.js';
import type { Repositories } from '../model/repositories.js';

/** Parsed selectors remembered (canonical texts of triggers; few per organization). */
const MAX_PARSED = 1_000;

/**
 * Pools (docs/fleets.md, "Pools"): the jobs of a `fanout: one` trigger that no agent had room for
 * wait without an agent; an agent of the pool that connects or frees a place in its queue takes
 * them (the stream registry asks, domain/agents/stream-registry.ts), oldest first, each once.
 */
export class PoolService {
  private readonly parsed = new Map<string, Requirement[]>();

  constructor(private readonly deps: { repos: Pick<Repositories, 'agents' | 'workflows' | 'pools'> }) {}

  /** Takes for the agent up to `room` jobs waiting in its pools; gives their ids. */
  async claim(agentId: string, room: number): Promise<string[]> {
    const { repos } = this.deps;
    const agent = await repos.agents.findById(agentId);
    if (!agent || agent.status === 'revoked') return [];
    const workflows = new Map((await repos.workflows.listActiveByAgents([agent.id])).map((w) => [w.name, w.id]));
    const jobs = await repos.pools.claim(
      {
        id: agent.id,
        orgId: agent.orgId,
        workflows,
        matches: (selector) => matchesSelector(this.requirements(selector), agent.labels),
        capacity: agent.queueCapacity ?? DEFAULT_AGENT_QUEUE_CAPACITY,
      },
      room,
    );
    return jobs.map((job) => job.id);
  }

  private requirements(selector: string): Requirement[] {
    let requirements = this.parsed.get(selector);
    if (!requirements) {
      requirements = parseSelector(selector);
      if (this.parsed.size >= MAX_PARSED) this.parsed.clear();
      this.parsed.set(selector, requirements);
    }
    return requirements;
  }
}

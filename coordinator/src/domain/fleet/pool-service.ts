import { matchesSelector, parseSelector, type Requirement } from '@drover/shared';
import { DEFAULT_AGENT_QUEUE_CAPACITY, type StreamAgent, type StreamPools } from '../agents/stream-registry.js';
import type { JobEvents } from '../jobs/job-events.js';
import type { PoolVersion } from '../model/pools.js';
import type { Repositories } from '../model/repositories.js';
import { runParamsProblems } from '../workflows/workflow-definitions.js';

/** Parsed selectors remembered (canonical texts of triggers; few per organization). */
const MAX_PARSED = 1_000;

/**
 * Pools (docs/fleets.md, "Pools"): the jobs of a `fanout: one` trigger that no agent had room for
 * wait without an agent; an agent of the pool that connects or frees a place in its queue takes
 * them (the stream registry asks, domain/agents/stream-registry.ts), oldest first, each once.
 */
export class PoolService implements StreamPools {
  private readonly parsed = new Map<string, Requirement[]>();

  constructor(
    private readonly deps: {
      repos: Pick<Repositories, 'agents' | 'workflows' | 'pools'>;
      jobEvents: Pick<JobEvents, 'jobPooled'>;
    },
  ) {}

  /**
   * Takes for the agent up to `room` jobs waiting in its pools; gives their ids. Asked whenever a
   * place in a queue frees, it first reads whether any job waits in the organization (an index
   * seek, no lock): most often none does, and nothing else is read or written.
   */
  async claim(taker: StreamAgent, room: number): Promise<string[]> {
    const { repos } = this.deps;
    if (room <= 0 || !(await repos.pools.anyWaiting(taker.orgId))) return [];
    const agent = await repos.agents.findById(taker.id);
    if (!agent || agent.status === 'revoked') return [];
    const workflows = new Map(
      (await repos.workflows.listActiveByAgents([agent.id])).map((w): [string, PoolVersion] => [
        w.name,
        {
          id: w.id,
          timeoutMs: w.timeoutMs,
          // As the agent checks them (params-check.ts): a `file` param is a download reference by now.
          takes: (params) =>
            w.paramsSchema === null || runParamsProblems(w.paramsSchema, params, { files: false }).length === 0,
        },
      ]),
    );
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

  /**
   * The agent became `disconnected`: the jobs of pools handed to it that it has not started go
   * back to their pool, and the streams of the organization with room (on every coordinator) are
   * offered them. Gives their ids.
   */
  async release(agentId: string): Promise<string[]> {
    const jobs = await this.deps.repos.pools.release(agentId);
    for (const job of jobs) this.deps.jobEvents.jobPooled(job.orgId, job.id);
    return jobs.map((job) => job.id);
  }

  waitingOrgs(): Promise<string[]> {
    return this.deps.repos.pools.waitingOrgs();
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

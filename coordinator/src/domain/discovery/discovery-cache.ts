import type { Agent } from '../model/agents.js';
import type { ApiToken } from '../model/api-tokens.js';
import type { ChangeCounterRepository } from '../model/change-counter.js';
import type { Workflow } from '../model/workflows.js';
import { reachableAgents, runnableWorkflows, type DiscoveryRepositories } from './discovery.js';
import { GenerationCache } from '../generation-cache.js';

export interface DiscoveryCacheRepositories extends DiscoveryRepositories {
  changeCounter: Pick<ChangeCounterRepository, 'generation'>;
}

type DiscoveringToken = Pick<ApiToken, 'id' | 'orgId' | 'scopes'>;

/**
 * Token discovery answers kept in memory per token, exact: they are recomputed as soon as any
 * agent, workflow, trigger or token changed (see GenerationCache). The arrays are shared between
 * requests and must not be mutated.
 */
export class DiscoveryCache {
  private readonly agentLists: GenerationCache<Agent[]>;
  private readonly workflowLists: GenerationCache<Workflow[]>;

  constructor(
    private readonly repos: DiscoveryCacheRepositories,
    maxTokens = 1000,
  ) {
    this.agentLists = new GenerationCache(repos.changeCounter, maxTokens);
    this.workflowLists = new GenerationCache(repos.changeCounter, maxTokens);
  }

  /** `reachableAgents` of the token; `generation` as in GenerationCache.get. */
  agents(token: DiscoveringToken, generation?: number): Promise<Agent[]> {
    return this.agentLists.get(token.id, () => reachableAgents(this.repos, token), generation);
  }

  /** `runnableWorkflows` of the token; `generation` as in GenerationCache.get. */
  workflows(token: DiscoveringToken, generation?: number): Promise<Workflow[]> {
    return this.workflowLists.get(token.id, () => runnableWorkflows(this.repos, token), generation);
  }
}

import type { AuthenticatingApiToken } from '../model/api-tokens.js';
import type { Repositories } from '../model/repositories.js';
import { GenerationCache } from '../generation-cache.js';

const perRepositories = new WeakMap<Repositories, GenerationCache<AuthenticatingApiToken>>();

/**
 * The API token stored under this hash, or null; known tokens are kept in memory until any
 * token, agent, workflow, trigger or membership is written (GenerationCache), so a revocation takes effect on
 * the very next request. Expiry and revocation are still checked by the caller on every use.
 * One cache per set of repositories (per coordinator), so coordinators in one process (tests)
 * never share entries.
 */
export function findApiTokenByHash(
  repos: Repositories,
  tokenHash: string,
  /** The change counter as the caller already read it for this request (see GenerationCache.get). */
  generation?: number,
): Promise<AuthenticatingApiToken | null> {
  let cache = perRepositories.get(repos);
  if (!cache) {
    cache = new GenerationCache<AuthenticatingApiToken>(repos.changeCounter, 10_000);
    perRepositories.set(repos, cache);
  }
  return cache.get(tokenHash, () => repos.apiTokens.findForAuthentication(tokenHash), generation);
}

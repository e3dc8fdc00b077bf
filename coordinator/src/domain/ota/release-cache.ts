import type { Application, ApplicationRepository } from '../model/applications.js';
import type { ChangeCounterRepository } from '../model/change-counter.js';
import type { StoredFile } from '../model/files.js';
import type { Release, ReleaseRepository } from '../model/releases.js';
import type { RolloutRepository } from '../model/rollouts.js';
import { GenerationCache } from '../generation-cache.js';

/** An application and all its releases, newest sequence first, as the desired state needs them. */
export interface AppReleases {
  app: Application;
  releases: Release[];
  /**
   * The active artifact files of its releases, filled as manifests need them. Exact for as long
   * as the entry lives: an artifact stays active and unchanged while a release that is not yanked
   * references it (deletion answers `file_in_use`, the sweeper skips it, and its binding cannot be
   * deleted while it holds files), and a yank moves the OTA counter, which drops the entry.
   */
  artifacts: Map<string, StoredFile>;
  /**
   * A staged rollout of the application had not completed when the entry was read: the devices'
   * withheld releases must be read (rollouts.ts). Starting one publishes a release, which moves the
   * OTA counter; one that completes since only costs that read until the next move.
   */
  staged: boolean;
}

export interface ReleaseCacheRepositories {
  applications: Pick<ApplicationRepository, 'findById'>;
  releases: Pick<ReleaseRepository, 'list'>;
  changeCounter: Pick<ChangeCounterRepository, 'otaGeneration'>;
  rollouts: Pick<RolloutRepository, 'withholdsAny'>;
}

const perRepositories = new WeakMap<ReleaseCacheRepositories, GenerationCache<AppReleases>>();

/**
 * An application with its releases, kept in memory exactly: any write to applications or
 * releases (publish, yank, a new draft, an app change) moves the OTA change counter (migration
 * 0007) and empties the cache, so every signed manifest is computed from the current releases.
 * One cache per set of repositories (per coordinator). The values are shared between requests:
 * never mutate them. `generation`: the OTA counter as the caller read it for this request.
 */
export function appReleases(
  repos: ReleaseCacheRepositories,
  appId: string,
  generation?: number,
): Promise<AppReleases | null> {
  let cache = perRepositories.get(repos);
  if (!cache) {
    cache = new GenerationCache<AppReleases>({ generation: () => repos.changeCounter.otaGeneration() }, 10_000);
    perRepositories.set(repos, cache);
  }
  return cache.get(
    appId,
    async () => {
      const app = await repos.applications.findById(appId);
      if (!app) return null;
      const [releases, staged] = await Promise.all([repos.releases.list(app.id), repos.rollouts.withholdsAny(app.id)]);
      return { app, releases, artifacts: new Map(), staged };
    },
    generation,
  );
}

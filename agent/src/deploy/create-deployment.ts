import type { KeyObject } from 'node:crypto';
import type { Logger } from 'pino';
import type { Masker } from '../exec/secret-masker.js';
import type { DownloadSettings } from '../files/download.js';
import type { SignedCaller } from '../http/client.js';
import { signedDeployApi, type DeployApi } from './deploy-api.js';
import { DeployStateStore } from './deploy-state.js';
import { DeploySync, type DeploySyncOptions } from './deploy-sync.js';
import { ManifestSource } from './manifest-source.js';
import type { RunJob } from '../jobs/job-run.js';
import { deployJobRunner, type DeployContext } from './run-deploy-job.js';

export interface DeploymentOptions {
  stateDir: string;
  caller: SignedCaller;
  /** The server key pinned at enrollment (null: not usable, every manifest is refused). */
  serverKey: KeyObject | null;
  logger: Logger;
  postponeOptional: boolean;
  onDamaged(file: string, reason: string): void;
  /** Another API (tests); default: the signed calls of `caller`. */
  api?: DeployApi;
  /** Masks secret values in what deployments report and log (absent: nothing is masked). */
  masker?: () => Masker;
  /** Told the bytes of each artifact downloaded (the agent's counters). */
  onDownloaded?(bytes: number): void;
  /** Installs the agent's own binary for the built-in update workflow (self-update/). */
  selfUpdate?: DeployContext['selfUpdate'];
  /** Where partial downloads are kept, the minimum speed (the agent's run options). */
  downloads?: DownloadSettings;
}

export interface Deployment {
  /** The deployment state file and the coordinator's deploy calls (self-update reports through them). */
  store: DeployStateStore;
  api: DeployApi;
  /** Runs update jobs: the daemon hands it to the job manager. */
  runJob: RunJob;
  /** The pull fallback; the daemon starts and stops it. */
  sync(options: Pick<DeploySyncOptions, 'intervalMs' | 'connected' | 'busy'>): DeploySync;
}

/** The daemon's over-the-air update parts, sharing one state file and one manifest source. */
export function createDeployment(options: DeploymentOptions): Deployment {
  const { logger } = options;
  const store = DeployStateStore.open(options.stateDir, options.onDamaged);
  const api = options.api ?? signedDeployApi(options.caller);
  if (!options.serverKey) {
    logger.error('the server key pinned in agent.json is not a usable Ed25519 key: every update will be refused');
  }
  const clock = options.caller.clock;
  const manifests = new ManifestSource({
    api,
    store,
    serverKey: options.serverKey,
    agentId: options.caller.agentId,
    now: clock ? () => clock.now() : Date.now,
    logger,
  });
  if (options.postponeOptional) {
    logger.info('optional updates are postponed by local policy (--postpone-optional); forced ones are installed');
  }
  const context: DeployContext = {
    api,
    manifests,
    store,
    postponeOptional: options.postponeOptional,
    ...(options.masker ? { masker: options.masker } : {}),
    ...(options.onDownloaded ? { onDownloaded: options.onDownloaded } : {}),
    ...(options.selfUpdate ? { selfUpdate: options.selfUpdate } : {}),
    ...(options.downloads ? { downloads: options.downloads } : {}),
  };
  return {
    store,
    api,
    runJob: deployJobRunner(context),
    sync: (s) =>
      new DeploySync({
        api,
        manifests,
        store,
        logger,
        postponeOptional: options.postponeOptional,
        masker: options.masker,
        ...s,
      }),
  };
}

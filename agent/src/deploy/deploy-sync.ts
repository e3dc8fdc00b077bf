import type { Logger } from 'pino';
import type { DeviceState, ManifestPayload } from '@drover/shared';
import { formatDuration } from '../exec/durations.js';
import type { Masker } from '../exec/secret-masker.js';
import type { DeployApi } from './deploy-api.js';
import { describeRelease, runsDesired } from './deploy-checks.js';
import { refusedMessage, reportDeployState } from './deploy-report.js';
import type { AppDeployState, DeployStateStore } from './deploy-state.js';
import type { ManifestSource } from './manifest-source.js';

export interface DeploySyncOptions {
  api: DeployApi;
  manifests: ManifestSource;
  store: DeployStateStore;
  logger: Logger;
  /** `--postpone-optional`. */
  postponeOptional: boolean;
  /** `--deploy-poll-interval` in ms. */
  intervalMs: number;
  /** Whether the stream is connected now (polls are skipped while it is not). */
  connected(): boolean;
  /** Applications whose update job is queued or running here: left alone. */
  busy(): Set<string>;
  /** Masks secret values in the errors reported (absent: nothing is masked). */
  masker?: (() => Masker) | undefined;
}

/**
 * The pull fallback of over-the-air updates (docs/agent.md, "Over-the-air updates"): at every
 * stream connect and every `--deploy-poll-interval`, fetch the signed desired manifest, verify
 * each entry, and for each application whose desired release is not what this agent installed,
 * report the local installation; the coordinator then issues the update job or pushes its
 * pending `deploy` event again (one dropped on a full queue, say). The first check after start
 * reports every bound application: the baseline.
 */
export class DeploySync {
  readonly #reported = new Set<string>();
  #timer: NodeJS.Timeout | null = null;
  #running: Promise<void> | null = null;
  #again = false;
  #lastError: string | null = null;
  readonly #options: DeploySyncOptions;

  constructor(options: DeploySyncOptions) {
    this.#options = options;
  }

  start(): void {
    if (this.#timer) return;
    this.#timer = setInterval(() => {
      if (this.#options.connected()) void this.check('poll');
    }, this.#options.intervalMs);
    this.#timer.unref();
  }

  stop(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
  }

  /** Runs a check now; a check asked for while one runs runs once more after it. Never rejects. */
  check(reason: 'connect' | 'poll'): Promise<void> {
    if (this.#running) {
      this.#again = true;
      return this.#running;
    }
    this.#running = (async () => {
      do {
        this.#again = false;
        await this.#checkOnce(reason).catch((error: unknown) =>
          this.#options.logger.error({ err: error }, `the deployment check failed: ${(error as Error).message}`),
        );
      } while (this.#again);
    })().finally(() => {
      this.#running = null;
    });
    return this.#running;
  }

  async #checkOnce(reason: 'connect' | 'poll'): Promise<void> {
    const { logger, manifests } = this.#options;
    let checks;
    try {
      checks = await manifests.fetch();
    } catch (error) {
      const message = (error as Error).message;
      if (message !== this.#lastError)
        logger.warn(
          { err: error },
          `could not fetch the signed manifest (${message}); trying again in ${formatDuration(this.#options.intervalMs)}`,
        );
      this.#lastError = message;
      return;
    }
    this.#lastError = null;
    logger.debug({ reason, apps: checks.length }, `deployment check (${reason}): ${checks.length} application(s)`);
    const busy = this.#options.busy();
    for (const check of checks) {
      if (!check.ok) {
        logger.error(
          { applicationId: check.applicationId, problem: check.problem },
          `refused a manifest entry${check.applicationId ? ` of application ${check.applicationId}` : ''}: ${check.message}`,
        );
        if (check.applicationId) {
          // Once an entry is accepted again, the installation is reported again (the refusal replaced it).
          this.#reported.delete(check.applicationId);
          await this.#report(check.applicationId, 'refused', refusedMessage(check.message));
        }
        continue;
      }
      if (busy.has(check.payload.application_id)) continue;
      await this.#reconcile(check.payload);
    }
  }

  /** Reports the local installation when the coordinator should act on it (or once, as the baseline). */
  async #reconcile(payload: ManifestPayload): Promise<void> {
    const id = payload.application_id;
    const local = this.#options.store.get(id);
    const desired = payload.desired;
    const behind = desired !== null && !runsDesired(local.current, desired);
    const baseline = !this.#reported.has(id);
    if (!behind && !baseline) return;
    const { state, error } = this.#stateToReport(payload, local, behind);
    if (behind && state === 'idle') {
      const have = local.current ? describeRelease(local.current) : 'nothing installed by this agent';
      this.#options.logger.info(
        { applicationId: id, desired: desired.release_id },
        `${payload.slug}: the desired release is ${describeRelease(desired)}${payload.forced ? ' (forced)' : ''}, this agent has ${have}; asking the coordinator for the update`,
      );
    }
    const answer = await this.#report(id, state, error);
    if (answer) this.#reported.add(id);
  }

  #stateToReport(
    payload: ManifestPayload,
    local: AppDeployState,
    behind: boolean,
  ): { state: DeviceState; error: string | null } {
    const desiredId = payload.desired?.release_id;
    if (!behind) return { state: local.current ? 'installed' : 'idle', error: null };
    if (this.#options.postponeOptional && !payload.forced && local.postponed?.releaseId === desiredId) {
      return { state: 'postponed', error: null };
    }
    // The last attempt at this very release failed: say so, rather than asking for it again at
    // once (the coordinator retries with its backoff, and stops after a few failures).
    const failure = local.lastFailure;
    if (failure && failure.releaseId === desiredId) return { state: failure.state, error: failure.error };
    return { state: 'idle', error: null };
  }

  #report(applicationId: string, state: DeviceState, error: string | null) {
    return reportDeployState(this.#options, this.#options.logger, applicationId, state, error);
  }
}

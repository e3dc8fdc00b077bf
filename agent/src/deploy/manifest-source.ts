import type { KeyObject } from 'node:crypto';
import type { Logger } from 'pino';
import type { DeployApi } from './deploy-api.js';
import type { DeployStateStore } from './deploy-state.js';
import { checkManifestEntry, type ManifestCheck } from './manifest-check.js';

export interface ManifestSourceOptions {
  api: DeployApi;
  store: DeployStateStore;
  /** The server key pinned at enrollment; null when agent.json holds no usable key (nothing is trusted). */
  serverKey: KeyObject | null;
  /** This agent's id (agent.json): manifest entries bound to another agent are refused. */
  agentId: string;
  /**
   * Unix ms on the coordinator's clock as this agent knows it: the daemon's ServerClock, corrected
   * from the coordinator's answers (their `Date` header, the manifest's own answer included).
   */
  now: () => number;
  logger: Logger;
}

/**
 * Fetches the signed desired manifest and checks every entry (manifest-check.ts), one fetch at a
 * time so that entries are checked in the order the coordinator issued them; the `issued_at` of
 * each accepted entry is recorded for the replay check. Throws what the API throws.
 */
export class ManifestSource {
  #chain: Promise<unknown> = Promise.resolve();
  /** Applications whose unbound entries (an older coordinator) were already warned about. */
  readonly #warnedUnbound = new Set<string>();
  readonly #options: ManifestSourceOptions;

  constructor(options: ManifestSourceOptions) {
    this.#options = options;
  }

  fetch(): Promise<ManifestCheck[]> {
    const next = this.#chain.then(() => this.#fetchAndCheck());
    this.#chain = next.catch(() => {});
    return next;
  }

  async #fetchAndCheck(): Promise<ManifestCheck[]> {
    const { api, store, serverKey, logger } = this.#options;
    const entries = await api.fetchDesired();
    // Read after the answer: the clock has learned from its Date header.
    const nowSeconds = Math.floor(this.#options.now() / 1000);
    return entries.map((entry) => {
      if (!serverKey) {
        return {
          ok: false,
          problem: 'bad_signature',
          applicationId: null,
          message: 'the server key pinned in agent.json is not a usable Ed25519 key: no manifest can be trusted',
        };
      }
      const check = checkManifestEntry(entry, serverKey, {
        agentId: this.#options.agentId,
        nowSeconds,
        lastIssuedAt: (id) => store.get(id).lastIssuedAt,
        installed: (id) => store.get(id).current,
        pinnedKeys: (id) => store.get(id).releaseKeys ?? null,
      });
      if (check.ok) {
        const { application_id: id, issued_at: issuedAt } = check.payload;
        if (check.unbound && !this.#warnedUnbound.has(id)) {
          this.#warnedUnbound.add(id);
          logger.warn({ applicationId: id }, check.unbound);
        }
        if (check.pin) logger.info({ applicationId: id }, check.pin.note);
        if (store.get(id).lastIssuedAt !== issuedAt || check.pin) {
          try {
            store.update(id, { lastIssuedAt: issuedAt, ...(check.pin ? { releaseKeys: check.pin.keys } : {}) });
          } catch (error) {
            logger.error(
              { err: error, applicationId: id },
              'cannot record the manifest time or the pinned release keys in deploy/state.json',
            );
          }
        }
      }
      return check;
    });
  }
}

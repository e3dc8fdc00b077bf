import type { KeyObject } from 'node:crypto';
import type { Logger } from 'pino';
import { AgentError } from '../errors.js';
import { formatDuration } from '../exec/durations.js';
import type { DeployApi } from './deploy-api.js';
import type { DeployStateStore } from './deploy-state.js';
import { checkManifestEntry, type ManifestCheck } from './manifest-check.js';
import { untilAborted } from '../util/until-aborted.js';

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
  /** How long one manifest request may take in all (default MANIFEST_FETCH_TIMEOUT_MS). */
  fetchTimeoutMs?: number;
}

/**
 * How long one manifest request may take in all, however slowly its answer trickles in: the
 * request's idle timeout alone never ends an answer sent a byte at a time, and fetches wait for
 * each other. Long enough for a manifest over a poor link.
 */
export const MANIFEST_FETCH_TIMEOUT_MS = 120_000;

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

  /**
   * The checked entries of a newly fetched manifest. `signal` (an update job's cancel, stop and
   * timeout) ends the wait for an earlier fetch and the request itself: the promise then rejects
   * with the signal's reason. A request that takes longer than `fetchTimeoutMs` in all is given up.
   */
  fetch(signal?: AbortSignal): Promise<ManifestCheck[]> {
    const next = this.#chain.then(() => {
      signal?.throwIfAborted();
      return this.#fetchAndCheck(signal);
    });
    this.#chain = next.catch(() => {});
    return signal ? untilAborted(next, signal) : next;
  }

  async #fetchAndCheck(signal: AbortSignal | undefined): Promise<ManifestCheck[]> {
    const { api, store, serverKey, logger } = this.#options;
    const limitMs = this.#options.fetchTimeoutMs ?? MANIFEST_FETCH_TIMEOUT_MS;
    const limit = new AbortController();
    const timer = setTimeout(
      () =>
        limit.abort(
          new AgentError('unreachable', `the manifest request took longer than ${formatDuration(limitMs)}; given up`),
        ),
      limitMs,
    );
    let entries: unknown[];
    let requestNonce: string;
    try {
      ({ entries, requestNonce } = await api.fetchDesired(
        signal ? AbortSignal.any([signal, limit.signal]) : limit.signal,
      ));
    } catch (error) {
      signal?.throwIfAborted();
      if (limit.signal.aborted) throw limit.signal.reason as Error;
      throw error;
    } finally {
      clearTimeout(timer);
    }
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
        requestNonce,
        requestBound: (id) => store.get(id).requestBound === true,
        lastIssuedAt: (id) => store.get(id).lastIssuedAt,
        installed: (id) => store.get(id).current,
        pinnedKeys: (id) => store.get(id).releaseKeys ?? null,
        allPins: () =>
          store.applicationIds().flatMap((id) => {
            const { releaseKeys, current } = store.get(id);
            return releaseKeys ? [{ applicationId: id, keys: releaseKeys, installed: current }] : [];
          }),
      });
      if (check.ok) {
        const { application_id: id, issued_at: issuedAt } = check.payload;
        if (check.unbound && !this.#warnedUnbound.has(id)) {
          this.#warnedUnbound.add(id);
          logger.warn({ applicationId: id }, check.unbound);
        }
        if (check.pin) logger.info({ applicationId: id }, check.pin.note);
        // Never moved back: a fresh entry from a coordinator whose clock is a little behind another's.
        const last = Math.max(store.get(id).lastIssuedAt ?? issuedAt, issuedAt);
        const bound = check.fresh === true && store.get(id).requestBound !== true;
        if (store.get(id).lastIssuedAt !== last || check.pin || bound) {
          try {
            store.update(id, {
              lastIssuedAt: last,
              ...(check.pin ? { releaseKeys: check.pin.keys } : {}),
              ...(bound ? { requestBound: true } : {}),
            });
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

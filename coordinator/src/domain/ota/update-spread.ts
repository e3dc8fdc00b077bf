import type { Clock } from '../../util/clock.js';

/** An evaluation the fleet can start within this (ms) is not spread: a small publish starts at once. */
const UNSPREAD_MS = 1_000;
/** How long a job's spread waits for its first send; later sends (a redelivery) carry none. */
const KEPT_MS = 60_000;

/**
 * How an update job's start is spread over a fleet (docs/ota.md, "The `deploy` event"): the jobs
 * an evaluation of many bindings issues (a publish to a whole channel, a rollout's wave) have
 * their `deploy` event carry `startWithinMs`, the time over which `startsPerSecond` devices a
 * second start their jobs, and each agent starts its job at a random moment within it. An update
 * job's start is followed by the device's signed reports, its manifest and its download; coming
 * all at once they would be answered between the chunks of the publish and hold back the events
 * of the devices still to be told. Spread, the events go out first and the follow-ups arrive at
 * a pace the coordinator serves. An evaluation whose devices start within a second at that pace
 * (1,000 at the default) is not spread.
 *
 * Each job's spread is kept, in this coordinator's memory, until its first send (or KEPT_MS):
 * with several coordinators, a job sent by another than the one that issued it carries none.
 */
export class UpdateSpread {
  readonly #startsPerSecond: number;
  readonly #clock: Clock;
  /** Jobs issued with a spread and not sent yet, oldest first. */
  readonly #pending = new Map<string, { spreadMs: number; at: number }>();

  constructor(options: { startsPerSecond: number; clock: Clock }) {
    this.#startsPerSecond = options.startsPerSecond;
    this.#clock = options.clock;
  }

  /** The spread of the jobs an evaluation of `bindings` issues (0: none). */
  of(bindings: number): number {
    const spreadMs = Math.ceil((bindings / this.#startsPerSecond) * 1_000);
    return spreadMs > UNSPREAD_MS ? spreadMs : 0;
  }

  /** Job `jobId` was issued by an evaluation whose spread is `spreadMs`. */
  issued(jobId: string, spreadMs: number): void {
    if (spreadMs <= 0) return;
    const now = this.#clock.now();
    for (const [id, { at }] of this.#pending) {
      if (now - at < KEPT_MS) break;
      this.#pending.delete(id);
    }
    this.#pending.set(jobId, { spreadMs, at: now });
  }

  /** The `startWithinMs` of job `jobId`'s `deploy` event sent now: its spread at the first send, else 0. */
  take(jobId: string): number {
    const pending = this.#pending.get(jobId);
    if (!pending) return 0;
    this.#pending.delete(jobId);
    return this.#clock.now() - pending.at < KEPT_MS ? pending.spreadMs : 0;
  }
}

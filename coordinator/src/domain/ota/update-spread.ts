import type { Clock } from '../../util/clock.js';

/** An evaluation the fleet can start within this (ms) is not spread: a small publish starts at once. */
const UNSPREAD_MS = 1_000;
/** How long after an evaluation ends its events still carry its spread (they are built after the commit). */
const SPREAD_TAIL_MS = 1_000;

/**
 * How an update job's start is spread over a fleet (docs/ota.md, "The `deploy` event"): while
 * the engine evaluates many bindings at once (a publish to a whole channel, a rollout's wave),
 * the `deploy` events it sends carry `startWithinMs`, the time over which `startsPerSecond`
 * devices a second start their jobs, and each agent starts its job at a random moment within it.
 * An update job's start is followed by the device's signed reports, its manifest and its
 * download; coming all at once they would be answered between the chunks of the publish and hold
 * back the events of the devices still to be told. Spread, the events go out first and the
 * follow-ups arrive at a pace the coordinator serves. An evaluation whose devices start within a
 * second at that pace (1,000 at the default) is not spread.
 */
export class UpdateSpread {
  readonly #startsPerSecond: number;
  readonly #clock: Clock;
  /** Evaluations under way, each with its spread. */
  readonly #active = new Map<symbol, number>();
  /** The spread of the last evaluation to end, and until when it still applies. */
  #tail = { spreadMs: 0, until: 0 };

  constructor(options: { startsPerSecond: number; clock: Clock }) {
    this.#startsPerSecond = options.startsPerSecond;
    this.#clock = options.clock;
  }

  /** An evaluation of `bindings` begins; the function it returns says it ended. */
  begin(bindings: number): () => void {
    const spreadMs = Math.ceil((bindings / this.#startsPerSecond) * 1_000);
    if (spreadMs <= UNSPREAD_MS) return () => undefined;
    const key = Symbol('evaluation');
    this.#active.set(key, spreadMs);
    return () => {
      this.#active.delete(key);
      const now = this.#clock.now();
      const tail = this.#tail.until > now ? this.#tail.spreadMs : 0;
      this.#tail = { spreadMs: Math.max(tail, spreadMs), until: now + SPREAD_TAIL_MS };
    };
  }

  /** The `startWithinMs` of a `deploy` event sent now: 0 when no large evaluation is under way. */
  startWithinMs(): number {
    let spread = this.#tail.until > this.#clock.now() ? this.#tail.spreadMs : 0;
    for (const ms of this.#active.values()) spread = Math.max(spread, ms);
    return spread;
  }
}

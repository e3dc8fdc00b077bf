export interface BackoffOptions {
  /** The first delay's upper bound. */
  baseMs: number;
  /** No delay is longer than this. */
  capMs: number;
  /** A number in [0, 1); Math.random by default (tests pass their own). */
  random?: () => number;
}

/**
 * Exponential backoff with full jitter: attempt n waits a random time between 0 and
 * min(cap, base × 2^n), so that many agents coming back after an outage do not reconnect in step.
 * `reset()` after a success starts again from the base.
 */
export class Backoff {
  #attempt = 0;
  readonly #options: BackoffOptions;

  constructor(options: BackoffOptions) {
    this.#options = options;
  }

  /** The delay before the next attempt; each call counts one more failure. */
  next(): number {
    const ceiling = Math.min(this.#options.capMs, this.#options.baseMs * 2 ** Math.min(this.#attempt, 30));
    this.#attempt += 1;
    return Math.floor((this.#options.random ?? Math.random)() * ceiling);
  }

  reset(): void {
    this.#attempt = 0;
  }

  get attempts(): number {
    return this.#attempt;
  }
}

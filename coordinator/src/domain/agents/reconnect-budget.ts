import type { Clock } from '../../util/clock.js';

/** The longest `Retry-After` given: a fleet larger than a minute of the budget waits its turn again. */
const MAX_RETRY_AFTER_S = 60;
/** The shortest spread the `retry` hint names, however small the fleet. */
const MIN_RETRY_HINT_MS = 1_000;
/**
 * The most the bucket holds, in seconds of the budget: the opens admitted back to back at most. A
 * tenth of a second keeps a fleet waiting at the door (the listen backlog, as a restarted
 * coordinator starts listening) from being admitted a whole second's worth at once, which held
 * every other request up for ~0.3 s (docs/performance.md, "Reconnect storm").
 */
const BURST_SECONDS = 0.1;

export type ReconnectAdmission = { admitted: true } | { admitted: false; retryAfterSeconds: number };

/**
 * How many agent streams may open per second (docs/operations.md, "Reconnect storms"): the rest
 * are shed at once with a 503 and a `Retry-After` that spreads them over the seconds to come,
 * rather than queued, so that a fleet coming back together (a coordinator restart, a network
 * outage ending) costs the coordinator a bounded rate of stream opens, and operator and CI calls
 * keep their share of the machine.
 *
 * A token bucket of a tenth of a second's worth refills continuously. A refused open is given the next
 * free slot (slots `1 / perSecond` apart, from one second ahead) as whole seconds: the agents come
 * back about as fast as the bucket refills, each adding its own jitter within the second. Nothing is
 * held for the agent: one that never comes back costs its slot only.
 */
export class ReconnectBudget {
  readonly #perSecond: number;
  readonly #clock: Clock;
  #tokens: number;
  #refilledAt: number;
  /** When the next refused open is told to come back (ms, the clock's). */
  #nextSlotAt = 0;
  #shed = 0;

  constructor(options: { perSecond: number; clock: Clock }) {
    this.#perSecond = options.perSecond;
    this.#clock = options.clock;
    this.#tokens = this.#burst();
    this.#refilledAt = options.clock.now();
  }

  /** Takes one stream open from the budget, or says when to come back. */
  admit(): ReconnectAdmission {
    const now = this.#refill();
    if (this.#tokens >= 1) {
      this.#tokens -= 1;
      return { admitted: true };
    }
    this.#shed += 1;
    const slot = Math.max(this.#nextSlotAt, now + 1_000);
    this.#nextSlotAt = slot + 1_000 / this.#perSecond;
    return { admitted: false, retryAfterSeconds: Math.min(MAX_RETRY_AFTER_S, Math.ceil((slot - now) / 1_000)) };
  }

  /**
   * Whether the budget is spent right now, without taking from it: the agent's other connect-time
   * calls (its workflows and labels reports) are refused while it is, as its stream would be.
   */
  exhausted(): number | null {
    const now = this.#refill();
    if (this.#tokens >= 1) return null;
    return Math.min(MAX_RETRY_AFTER_S, Math.max(1, Math.ceil((this.#nextSlotAt - now) / 1_000)));
  }

  /**
   * The SSE `retry` hint for a stream (ms): the time over which `connected` agents coming back at
   * once fit the budget. An agent whose stream drops waits a random time up to it before its
   * first reconnect, so that a whole fleet losing its streams together spreads by itself.
   */
  retryHintMs(connected: number): number {
    return Math.max(MIN_RETRY_HINT_MS, Math.ceil((connected / this.#perSecond) * 1_000));
  }

  /** Stream opens refused since the start. */
  get shed(): number {
    return this.#shed;
  }

  #burst(): number {
    return Math.max(1, this.#perSecond * BURST_SECONDS);
  }

  #refill(): number {
    const now = this.#clock.now();
    const elapsed = now - this.#refilledAt;
    if (elapsed > 0) {
      this.#tokens = Math.min(this.#burst(), this.#tokens + (elapsed / 1_000) * this.#perSecond);
      this.#refilledAt = now;
    }
    return now;
  }
}

/**
 * The coordinator's time as this machine can know it. Edge clocks are often wrong (no NTP, a
 * dead RTC battery), and the coordinator refuses a signature whose timestamp is more than 300 s
 * from its own clock. So the agent signs with `now()`, its own clock corrected by an offset
 * measured from the coordinator's answers: every answer's `Date` header (whole seconds), and the
 * exact `details.serverTime` of a signature refusal.
 *
 * Each answer bounds the offset: the server's time was read between the moment the request left
 * and the moment the answer came back, so offset ∈ [server − received, server + precision − sent].
 * The estimate (0 at first: the local clock is trusted) moves only when an answer shows it outside
 * those bounds, and then to their middle:
 * a good estimate never jitters with network delays or the header's rounding to seconds, and a
 * clock that jumps (NTP finally syncing, a suspended VM) is followed at the next answer.
 */
export interface ClockChange {
  offsetMs: number;
  previousMs: number;
  /** True the first time an answer is seen. */
  first: boolean;
}

export class ServerClock {
  #offsetMs = 0;
  #measured = false;
  /** The bounds all answers since the last jump agree on. */
  #low = -Infinity;
  #high = Infinity;
  readonly #localNow: () => number;
  readonly #onChange: ((change: ClockChange) => void) | undefined;

  constructor(localNow: () => number = Date.now, onChange?: (change: ClockChange) => void) {
    this.#localNow = localNow;
    this.#onChange = onChange;
  }

  /** Unix milliseconds on the coordinator's clock, as well as it is known. */
  now(): number {
    return this.#localNow() + this.#offsetMs;
  }

  /** The local clock's reading (for the times that bracket a request). */
  localTime(): number {
    return this.#localNow();
  }

  /** Coordinator time minus local time, in ms (positive: this machine's clock is behind). */
  get offsetMs(): number {
    return this.#offsetMs;
  }

  /** Whether any answer has been seen yet. */
  get measured(): boolean {
    return this.#measured;
  }

  /** An answer's `Date` header (HTTP date, whole seconds), for a request sent at `sentAt` (local ms). */
  observeDateHeader(value: string | string[] | null | undefined, sentAt: number, receivedAt: number): void {
    const text = Array.isArray(value) ? value[0] : value;
    if (!text) return;
    const serverMs = Date.parse(text);
    if (Number.isNaN(serverMs)) return;
    this.#observe(serverMs, serverMs + 999, sentAt, receivedAt);
  }

  /** An exact server time (ms), read by the server while handling a request sent at `sentAt`. */
  observeServerTime(serverMs: number, sentAt: number, receivedAt: number): void {
    if (!Number.isFinite(serverMs)) return;
    this.#observe(serverMs, serverMs, sentAt, receivedAt);
  }

  #observe(serverLow: number, serverHigh: number, sentAt: number, receivedAt: number): void {
    if (receivedAt < sentAt) return; // the local clock jumped back mid-request: no bound
    const low = serverLow - receivedAt;
    const high = serverHigh - sentAt;
    const first = !this.#measured;
    this.#measured = true;
    if (Math.max(low, this.#low) <= Math.min(high, this.#high)) {
      this.#low = Math.max(low, this.#low);
      this.#high = Math.min(high, this.#high);
    } else {
      // Bounds that contradict the earlier ones: one of the clocks jumped. Start again from these.
      this.#low = low;
      this.#high = high;
    }
    const previousMs = this.#offsetMs;
    // An estimate the answers agree with stays (a local clock they agree with keeps offset 0).
    if (this.#offsetMs < this.#low || this.#offsetMs > this.#high) {
      this.#offsetMs = Math.round((this.#low + this.#high) / 2);
    }
    if (first || this.#offsetMs !== previousMs) this.#onChange?.({ offsetMs: this.#offsetMs, previousMs, first });
  }
}

/** "3 s behind", "1 day 2 h ahead": how far this machine's clock is from the coordinator's. */
export function describeOffset(offsetMs: number): string {
  const abs = Math.abs(offsetMs);
  const direction = offsetMs > 0 ? 'behind' : 'ahead of';
  let amount: string;
  if (abs < 1_000) amount = `${abs} ms`;
  else if (abs < 120_000) amount = `${(abs / 1000).toFixed(1)} s`;
  else if (abs < 7_200_000) amount = `${Math.round(abs / 60_000)} min`;
  else if (abs < 172_800_000) amount = `${(abs / 3_600_000).toFixed(1)} h`;
  else amount = `${(abs / 86_400_000).toFixed(1)} days`;
  return `${amount} ${direction}`;
}

/** An offset this large is worth a warning: the machine's clock needs fixing (NTP). */
export const LARGE_OFFSET_MS = 60_000;

/**
 * What a change of the measured offset is worth saying in the agent's log: a warning when the
 * offset is large (the first time, and when it moves), a notice when it moves by a second or more,
 * nothing for the usual sub-second corrections.
 */
export function describeClockChange(change: ClockChange): { level: 'warn' | 'info'; message: string } | null {
  const large = Math.abs(change.offsetMs) >= LARGE_OFFSET_MS;
  const moved = Math.abs(change.offsetMs - change.previousMs) >= 1_000;
  if (!moved && !(change.first && large)) return null;
  if (large) {
    return {
      level: 'warn',
      message:
        `this machine's clock is ${describeOffset(change.offsetMs)} the coordinator's: signing with the ` +
        `coordinator's time; set the clock right (NTP) so that logs and schedules agree`,
    };
  }
  if (Math.abs(change.offsetMs) < 1_000)
    return { level: 'info', message: "this machine's clock agrees with the coordinator's again" };
  return {
    level: 'info',
    message: `this machine's clock is ${describeOffset(change.offsetMs)} the coordinator's: signing with the coordinator's time`,
  };
}

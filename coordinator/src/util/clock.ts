/** Time source, injected so that tests can move windows and expiries without sleeping. */
export interface Clock {
  /** Unix milliseconds. */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

export function isoNow(clock: Clock): string {
  return new Date(clock.now()).toISOString();
}

/** Unix milliseconds as an ISO 8601 timestamp. */
export function isoAt(ms: number): string {
  return new Date(ms).toISOString();
}

/** Time source, injected so that tests can move windows and expiries without sleeping. */
export interface Clock {
  /** Unix milliseconds. */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

export function isoNow(clock: Clock): string {
  return new Date(clock.now()).toISOString();
}

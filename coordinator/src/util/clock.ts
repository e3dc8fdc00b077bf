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

/**
 * The first and last instants a stored time can be on both databases: PostgreSQL's timestamptz has
 * no year 0, and past 9999 `toISOString` writes a signed six-digit year (`+010000-...`), which
 * PostgreSQL refuses and SQLite compares as text before every stored time.
 */
export const FIRST_STORABLE_MS = Date.parse('0001-01-01T00:00:00.000Z');
export const LAST_STORABLE_MS = Date.parse('9999-12-31T23:59:59.999Z');

/**
 * A date-time from a request (the schemas' `date-time`: any offset, `t` and `z` in either case, a
 * space for the `T`, any fraction) as both databases store it: UTC `toISOString`, which compares
 * as a string. Null for what that format admits but a Date cannot hold (a leap second, 23:59:60)
 * and for a time outside the years 0001 to 9999, which PostgreSQL refuses (year 0) or
 * `toISOString` writes with six digits.
 */
export function storedInstant(value: string): string | null {
  const ms = Date.parse(value);
  if (!Number.isFinite(ms) || ms < FIRST_STORABLE_MS || ms > LAST_STORABLE_MS) return null;
  return new Date(ms).toISOString();
}

/** Why a date-time of a request cannot be stored (see storedInstant), for a 422's message. */
export const UNSTORABLE_INSTANT = 'must be a date-time between the years 0001 and 9999, such as 2026-01-31T12:00:00Z';

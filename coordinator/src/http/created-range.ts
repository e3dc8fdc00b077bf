import { describeValue, invalid } from '../errors.js';
import { timestamp } from './schemas/common.js';

/** The `createdAfter` and `createdBefore` query parameters of a list filtered by creation time. */
export const createdRangeQueryProperties = (what: string) =>
  ({
    createdAfter: { ...timestamp, maxLength: 64, description: `only ${what} created at or after this time` },
    createdBefore: { ...timestamp, maxLength: 64, description: `only ${what} created before this time` },
  }) as const;

/**
 * The first and last instants a stored time can be on both databases: PostgreSQL's timestamptz
 * has no year 0 (`0000-06-01T00:00:00Z` is refused), and past 9999 `toISOString` gives a signed
 * six-digit year (`+010000-...`), which PostgreSQL refuses and SQLite compares as text before
 * every stored time. No stored time lies outside them.
 */
const FIRST_STORED = Date.parse('0001-01-01T00:00:00.000Z');
const LAST_STORED = Date.parse('9999-12-31T23:59:59.999Z');

/**
 * The creation-time filters as stored times (UTC `toISOString`, which compare as strings), from
 * date-times with any offset; an empty range is refused rather than answered with nothing. A
 * bound beyond the instants a time can be stored at (a date-time of the year 0000, or one of
 * 9999 that an offset moves into 10000) is taken at the nearest of them: it selects the same
 * rows, alike on both databases.
 */
export function createdRange(after: string | undefined, before: string | undefined) {
  const createdAfter = instant('createdAfter', after);
  const createdBefore = instant('createdBefore', before);
  if (createdAfter !== undefined && createdBefore !== undefined && createdAfter >= createdBefore) {
    throw invalid(
      'querystring.createdBefore',
      `must be later than createdAfter (${new Date(createdAfter).toISOString()}), got ${describeValue(before)}`,
    );
  }
  return { createdAfter: storedTime(createdAfter), createdBefore: storedTime(createdBefore) };
}

function instant(name: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const time = Date.parse(value);
  // The schema's date-time admits what Date cannot hold (a leap second, 23:59:60).
  if (Number.isNaN(time)) {
    throw invalid(
      `querystring.${name}`,
      `must be a date-time such as 2026-01-31T12:00:00Z, got ${describeValue(value)}`,
    );
  }
  return time;
}

const storedTime = (time: number | undefined): string | undefined =>
  time === undefined ? undefined : new Date(Math.min(Math.max(time, FIRST_STORED), LAST_STORED)).toISOString();

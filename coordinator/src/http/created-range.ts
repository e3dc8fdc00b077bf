import { describeValue, invalid } from '../errors.js';
import { FIRST_STORABLE_MS, LAST_STORABLE_MS } from '../util/clock.js';
import { timestamp } from './schemas/common.js';

/** The `createdAfter` and `createdBefore` query parameters of a list filtered by creation time. */
export const createdRangeQueryProperties = (what: string) =>
  ({
    createdAfter: { ...timestamp, maxLength: 64, description: `only ${what} created at or after this time` },
    createdBefore: { ...timestamp, maxLength: 64, description: `only ${what} created before this time` },
  }) as const;

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
  time === undefined
    ? undefined
    : new Date(Math.min(Math.max(time, FIRST_STORABLE_MS), LAST_STORABLE_MS)).toISOString();

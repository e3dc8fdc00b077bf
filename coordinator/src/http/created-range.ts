import { describeValue, invalid } from '../errors.js';
import { timestamp } from './schemas/common.js';

/** The `createdAfter` and `createdBefore` query parameters of a list filtered by creation time. */
export const createdRangeQueryProperties = (what: string) =>
  ({
    createdAfter: { ...timestamp, maxLength: 64, description: `only ${what} created at or after this time` },
    createdBefore: { ...timestamp, maxLength: 64, description: `only ${what} created before this time` },
  }) as const;

/**
 * The creation-time filters as stored times (UTC `toISOString`, which compare as strings), from
 * date-times with any offset; an empty range is refused rather than answered with nothing.
 */
export function createdRange(after: string | undefined, before: string | undefined) {
  const createdAfter = storedTime('createdAfter', after);
  const createdBefore = storedTime('createdBefore', before);
  if (createdAfter !== undefined && createdBefore !== undefined && createdAfter >= createdBefore) {
    throw invalid(
      'querystring.createdBefore',
      `must be later than createdAfter (${createdAfter}), got ${describeValue(before)}`,
    );
  }
  return { createdAfter, createdBefore };
}

function storedTime(name: string, value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const time = new Date(value);
  // The schema's date-time admits what Date cannot hold (a leap second, 23:59:60).
  if (Number.isNaN(time.getTime())) {
    throw invalid(
      `querystring.${name}`,
      `must be a date-time such as 2026-01-31T12:00:00Z, got ${describeValue(value)}`,
    );
  }
  return time.toISOString();
}

import type { FastifyReply } from 'fastify';
import { describeValue, invalid } from '../errors.js';

/**
 * Keyset pagination of newest-first lists (audit entries, jobs). A page is cut at an increasing
 * integer key (entry id, job creation number); the key of a page's last item, as an opaque
 * string, is sent in the `x-next-cursor` header when more items follow and taken back as the
 * `cursor` query parameter.
 */
export const NEXT_CURSOR_HEADER = 'x-next-cursor';

/** How many items match a list's filters, on every page (the agents list). */
export const TOTAL_COUNT_HEADER = 'x-total-count';

/** The `cursor` query parameter's schema. */
export const cursorQueryProperty = {
  type: 'string',
  minLength: 1,
  maxLength: 32,
  description: `the ${NEXT_CURSOR_HEADER} of the previous page`,
} as const;

/** A page's 200 response schema: an array of `items`, with the cursor header. */
export const pageResponse = <T extends { examples: readonly unknown[] }>(items: T, what: string) =>
  ({
    type: 'array',
    items,
    examples: [[items.examples[0]]],
    headers: { [NEXT_CURSOR_HEADER]: { type: 'string', description: `present when more ${what} follow` } },
  }) as const;

/** A page's 200 response schema that also says, in `x-total-count`, how many `what` match on every page. */
export const countedPageResponse = <T extends { examples: readonly unknown[] }>(items: T, what: string) => {
  const page = pageResponse(items, what);
  return {
    ...page,
    headers: {
      ...page.headers,
      [TOTAL_COUNT_HEADER]: {
        type: 'string',
        pattern: '^[0-9]+$',
        description: `how many ${what} match the filters, on every page (a whole number)`,
      },
    },
  } as const;
};

/** The key a cursor stands for (items strictly below it come next); 422 for anything else. */
export function parseCursor(cursor: string | undefined): number | undefined {
  if (cursor === undefined) return undefined;
  const key = /^[1-9][0-9]{0,15}$/.test(cursor) ? Number(cursor) : NaN;
  if (!Number.isSafeInteger(key)) {
    throw invalid(
      'querystring.cursor',
      `must be a cursor from the ${NEXT_CURSOR_HEADER} header, got ${describeValue(cursor)}`,
    );
  }
  return key;
}

/** The latest instant a position cursor may name (the end of year 9999: ISO 8601's four digits). */
const LAST_INSTANT_MS = 253402300799999;

/**
 * The cursor of a list ordered by creation instant then insertion (files, where many are created
 * in one millisecond): `<Unix ms>_<key>`, the last item's. Opaque to callers, as the others.
 */
export function positionCursor(position: { createdAt: string; key: number }): string {
  return `${Date.parse(position.createdAt)}_${position.key}`;
}

/** The position a `positionCursor` stands for (items strictly after it come next); 422 for anything else. */
export function parsePositionCursor(cursor: string | undefined): { createdAt: string; key: number } | undefined {
  if (cursor === undefined) return undefined;
  const match = /^(0|[1-9][0-9]{0,14})_([1-9][0-9]{0,15})$/.exec(cursor);
  const ms = match ? Number(match[1]) : NaN;
  const key = match ? Number(match[2]) : NaN;
  if (!(ms <= LAST_INSTANT_MS) || !Number.isSafeInteger(key)) {
    throw invalid(
      'querystring.cursor',
      `must be a cursor from the ${NEXT_CURSOR_HEADER} header, got ${describeValue(cursor)}`,
    );
  }
  return { createdAt: new Date(ms).toISOString(), key };
}

/**
 * The page to answer from `rows`, fetched with `limit + 1` (one more than asked tells whether
 * another page follows, without a second query); sets the cursor header when one does.
 */
export function sendPage<T>(reply: FastifyReply, rows: T[], limit: number, key: (row: T) => number): T[] {
  const page = rows.slice(0, limit);
  if (rows.length > limit) void reply.header(NEXT_CURSOR_HEADER, String(key(page[page.length - 1]!)));
  return page;
}

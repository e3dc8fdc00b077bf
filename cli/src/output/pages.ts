import type { IncomingHttpHeaders } from 'node:http';
import type { ApiAnswer } from '../http/api.js';
import { CliError } from '../errors.js';

/**
 * Reads every page of a list (`--all`), from the page after `cursor` (the first page without it),
 * handing each to `onPage` as it comes, until an answer has no `x-next-cursor`. A coordinator that
 * answers a cursor it answered before would have the pages read again forever: that stops the
 * command with an error, after what was read was handed on. The one paging loop of the commands.
 */
export async function readEveryPage<T>(
  page: (cursor: string | undefined) => Promise<ApiAnswer<T[]>>,
  cursor: string | undefined,
  onPage: (items: T[], headers: IncomingHttpHeaders) => void,
): Promise<void> {
  const seen = new Set<string>(cursor === undefined ? [] : [cursor]);
  for (let next = cursor, pages = 1; ; pages++) {
    const answer = await page(next);
    onPage(answer.body, answer.headers);
    next = nextCursor(answer.headers);
    if (next === undefined) return;
    if (seen.has(next)) {
      throw new CliError(
        `the coordinator answered the cursor ${next} again after ${pages} page${pages === 1 ? '' : 's'}: ` +
          'stopped, as its pages would be read again forever (a fault of the coordinator or of a proxy before it)',
      );
    }
    seen.add(next);
  }
}

/** The cursor of the page after this answer's (its `x-next-cursor`); none on the last page. */
export function nextCursor(headers: IncomingHttpHeaders): string | undefined {
  const next = headers['x-next-cursor'];
  return typeof next === 'string' && next !== '' ? next : undefined;
}

/** How many items match, from the answer's `x-total-count` (a coordinator without it: `fallback`). */
export function totalOf(headers: IncomingHttpHeaders, fallback: number): number {
  const total = Number(headers['x-total-count']);
  return typeof headers['x-total-count'] === 'string' && Number.isInteger(total) && total >= 0 ? total : fallback;
}

/** How many of those that match a page shows: `3 devices`, or `100 of 10000 devices` for a part of them. */
export function countLine(shown: number, total: number, one: string, many: string): string {
  return `${shown === total ? '' : `${shown} of `}${total} ${total === 1 ? one : many}`;
}

import { describe, invalid } from '../errors.js';

/**
 * Job list pages are cut by the job's creation number (newest first). The cursor handed to
 * clients is that number for the last job of a page, a string they should treat as opaque.
 */
export function jobCursor(lastJobSeq: number): string {
  return String(lastJobSeq);
}

/** The creation number a cursor stands for; 422 for anything this server did not hand out. */
export function parseJobCursor(cursor: string | undefined): number | undefined {
  if (cursor === undefined) return undefined;
  const seq = /^[1-9][0-9]{0,15}$/.test(cursor) ? Number(cursor) : NaN;
  if (!Number.isSafeInteger(seq)) {
    throw invalid('querystring.cursor', `must be a cursor from the x-next-cursor header, got ${describe(cursor)}`);
  }
  return seq;
}

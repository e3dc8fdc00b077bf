import { describe, invalid } from '../errors.js';

/**
 * Audit pages are cut by entry id (newest first). The cursor handed to clients is the id of the
 * last entry of a page, as a string they should treat as opaque.
 */
export function auditCursor(lastEntryId: number): string {
  return String(lastEntryId);
}

/** The entry id a cursor stands for; 422 for anything this server did not hand out. */
export function parseAuditCursor(cursor: string | undefined): number | undefined {
  if (cursor === undefined) return undefined;
  const id = /^[1-9][0-9]{0,15}$/.test(cursor) ? Number(cursor) : NaN;
  if (!Number.isSafeInteger(id)) {
    throw invalid('querystring.cursor', `must be a cursor from the x-next-cursor header, got ${describe(cursor)}`);
  }
  return id;
}

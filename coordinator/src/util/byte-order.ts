/**
 * Text in the order of its UTF-8 bytes, as both databases sort text shown to people (SQLite's
 * BINARY collation, PostgreSQL's `COLLATE "C"`): the same list in the same order on either.
 */
export const byteOrder = (a: string, b: string): number => Buffer.compare(Buffer.from(a), Buffer.from(b));

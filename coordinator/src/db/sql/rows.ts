/**
 * Values as both databases take them as parameters and give them back in rows (db/sql/postgres.ts
 * reads PostgreSQL's rows into SQLite's shape).
 */

/** A flag as a parameter: 1 or 0 (SQLite has no boolean; PostgreSQL reads `1` and `0` as one). */
export const flag = (value: boolean): 1 | 0 => (value ? 1 : 0);

/** A nullable flag as a parameter. */
export const flagOrNull = (value: boolean | null): 1 | 0 | null => (value === null ? null : value ? 1 : 0);

/** A flag as read from a row (1 or 0). */
export const isSet = (value: number): boolean => value === 1;

/** A JSON document as a parameter: its text (null stays SQL NULL). */
export const json = (value: unknown): string | null =>
  value === null || value === undefined ? null : JSON.stringify(value);

/**
 * The parameter of `d.jsonRecords(parameter, alias, columns)` (dialect.ts): each object's values in
 * the order of `columns`, a missing one as null, as one JSON text.
 */
export function jsonRecords(columns: Readonly<Record<string, string>>, rows: readonly object[]): string {
  const names = Object.keys(columns);
  return JSON.stringify(rows.map((row) => names.map((name) => (row as Record<string, unknown>)[name] ?? null)));
}

/** Whether `error` is a unique constraint's refusal, on either database. */
export function isUniqueViolation(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  return code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}

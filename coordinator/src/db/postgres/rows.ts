import type { Queryable } from './pool.js';

/**
 * The queries' plumbing: SQL text is fixed in each repository, values travel as parameters
 * (`$1`, `$2`, ...), never spliced into the text.
 */
export async function all<T>(db: Queryable, sql: string, params: readonly unknown[] = []): Promise<T[]> {
  return (await db.query(sql, params as unknown[])).rows as T[];
}

export async function one<T>(db: Queryable, sql: string, params: readonly unknown[] = []): Promise<T | null> {
  return ((await db.query(sql, params as unknown[])).rows[0] as T | undefined) ?? null;
}

/** Runs a write; resolves with how many rows it changed. */
export async function run(db: Queryable, sql: string, params: readonly unknown[] = []): Promise<number> {
  return (await db.query(sql, params as unknown[])).rowCount ?? 0;
}

/** A JSON value as a `json` parameter (null stays SQL NULL). */
export const json = (value: unknown): string | null =>
  value === null || value === undefined ? null : JSON.stringify(value);

/** PostgreSQL's unique_violation, optionally of one constraint or index. */
export const isUniqueViolation = (error: unknown, constraint?: string): boolean => {
  const e = error as { code?: string; constraint?: string };
  return e.code === '23505' && (constraint === undefined || e.constraint === constraint);
};

import type { Queryable } from '../postgres/pool.js';
import { quote } from './sqlite-source.js';

/** A column of the target table: its name, its type (`udt_name`: int8, bool, json, ...) and whether it is an identity. */
export interface TargetColumn {
  name: string;
  type: string;
  identity: boolean;
}

/** The tables of the target's schema (the connection's current schema). */
export async function targetTables(db: Queryable): Promise<string[]> {
  const { rows } = await db.query<{ name: string }>(
    `SELECT table_name AS name FROM information_schema.tables
     WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'`,
  );
  return rows.map((r) => r.name);
}

export async function targetColumns(db: Queryable, table: string): Promise<TargetColumn[]> {
  const { rows } = await db.query<{ name: string; type: string; identity: string }>(
    `SELECT column_name AS name, udt_name AS type, is_identity AS identity FROM information_schema.columns
     WHERE table_schema = current_schema() AND table_name = $1 ORDER BY ordinal_position`,
    [table],
  );
  return rows.map((r) => ({ name: r.name, type: r.type, identity: r.identity === 'YES' }));
}

/** The first of `tables` (those that exist) holding a row, or null: the check that the target is empty. */
export async function firstTableWithRows(db: Queryable, tables: readonly string[]): Promise<string | null> {
  const existing = new Set(await targetTables(db));
  for (const table of tables) {
    if (!existing.has(table)) continue;
    const { rows } = await db.query(`SELECT 1 FROM ${quote(table)} LIMIT 1`);
    if (rows.length > 0) return table;
  }
  return null;
}

/**
 * Takes every table for the rest of the transaction: a coordinator started on the database
 * meanwhile waits (its bootstrap reads `users`) until the copy is committed or rolled back.
 */
export async function lockTables(db: Queryable, tables: readonly string[]): Promise<void> {
  await db.query(`LOCK TABLE ${tables.map(quote).join(', ')} IN ACCESS EXCLUSIVE MODE`);
}

/**
 * Inserts a batch of rows (each an array in the order of `columns`) as one statement: one array
 * parameter per column, zipped by `unnest`, whatever the number of rows. Flags arrive from SQLite
 * as 0 and 1; JSON documents as their text, which `json` keeps as written. A text holding a NUL
 * character (U+0000), which SQLite stores and PostgreSQL cannot, goes in with U+FFFD in its place,
 * as the coordinator stores such text on PostgreSQL: returns how many values of each column were
 * so changed (none: an empty map).
 */
export async function insertBatch(
  db: Queryable,
  table: string,
  columns: readonly TargetColumn[],
  rows: readonly unknown[][],
): Promise<Map<string, number>> {
  const replaced = new Map<string, number>();
  const arrays = columns.map((column, j) =>
    rows.map((row) => {
      const value = row[j];
      if (value === null || value === undefined) return null;
      if (column.type === 'bool') return value !== 0 && value !== false;
      if (typeof value === 'string' && value.includes('\u0000')) {
        replaced.set(column.name, (replaced.get(column.name) ?? 0) + 1);
        return value.replaceAll('\u0000', '\uFFFD');
      }
      return value;
    }),
  );
  const names = columns.map((c) => quote(c.name)).join(', ');
  const unnest = columns.map((c, j) => `$${j + 1}::${c.type}[]`).join(', ');
  await db.query(`INSERT INTO ${quote(table)} (${names}) SELECT * FROM unnest(${unnest})`, arrays);
  return replaced;
}

/**
 * Moves each identity column's sequence past the highest value copied in, so that the rows a
 * coordinator inserts next continue the numbering instead of colliding with it.
 */
export async function resetIdentities(db: Queryable, table: string, columns: readonly TargetColumn[]): Promise<void> {
  for (const column of columns.filter((c) => c.identity)) {
    await db.query(
      `SELECT setval(pg_get_serial_sequence($1, $2), max_value) FROM (SELECT max(${quote(column.name)}) AS max_value FROM ${quote(table)}) m
       WHERE max_value IS NOT NULL`,
      [quote(table), column.name],
    );
  }
}

export async function countRows(db: Queryable, table: string): Promise<number> {
  const { rows } = await db.query<{ n: number }>(`SELECT count(*) AS n FROM ${quote(table)}`);
  return Number(rows[0]?.n ?? 0);
}

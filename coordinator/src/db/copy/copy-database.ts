import { checkOut, type PgClient, type PgPool } from '../postgres/pool.js';
import {
  countRows,
  firstTableWithRows,
  insertBatch,
  lockTables,
  resetIdentities,
  targetColumns,
  targetTables,
  type TargetColumn,
} from './postgres-target.js';
import type { SourceColumn, SqliteSource } from './sqlite-source.js';
import { COPIED_TABLES, NOT_COPIED, ROWID_COLUMN } from './tables.js';

/** A row `copy-data` adds to `server_secrets` beside those it copies (the data directory's key files). */
export interface ExtraSecret {
  name: string;
  value: string;
  createdAt: string;
}

export interface CopyDatabaseOptions {
  source: SqliteSource;
  /** A pool on the target database, migrated to this build's schema. */
  pool: PgPool;
  extraSecrets?: readonly ExtraSecret[];
  /** A batch holds at most this many rows (default 5000)... */
  batchRows?: number;
  /** ...and about this much text (default 4 MiB). */
  batchBytes?: number;
  /** Told after each batch: the table, the rows copied so far, the table's rows. */
  onProgress?: (table: string, copied: number, total: number) => void;
}

/** What was copied: each table with its rows, as counted in both databases. */
export interface TableCopy {
  table: string;
  rows: number;
  /** Per column, the values whose NUL characters (U+0000) went in as U+FFFD (PostgreSQL's text cannot hold one). */
  nulReplaced: Map<string, number>;
}

/** The target database holds rows: nothing was written (the CLI's exit status 2). */
export class TargetNotEmptyError extends Error {
  readonly code = 'target_not_empty';
  constructor(readonly table: string) {
    super(`the database already holds data (table ${table} has rows); copy-data fills an empty database only`);
    this.name = 'TargetNotEmptyError';
  }
}

/** A table or a column on one side only: this build cannot copy that schema. */
export class SchemaMismatchError extends Error {
  readonly code = 'schema_mismatch';
  constructor(message: string) {
    super(message);
    this.name = 'SchemaMismatchError';
  }
}

/** The counts differ after the copy: it was rolled back. */
export class CopyVerificationError extends Error {
  readonly code = 'count_mismatch';
  constructor(readonly mismatches: { table: string; source: number; target: number }[]) {
    super(
      `the copy was rolled back: row counts differ (${mismatches
        .map((m) => `${m.table}: ${m.source} in SQLite, ${m.target} in PostgreSQL`)
        .join('; ')})`,
    );
    this.name = 'CopyVerificationError';
  }
}

const DEFAULT_BATCH_ROWS = 5000;
const DEFAULT_BATCH_BYTES = 4 * 1024 * 1024;

/**
 * Copies every table of the SQLite source into the target in ONE transaction: the tables are
 * locked, found empty, filled batch by batch, their identities moved past the copied rows and
 * their row counts compared with the source's before the commit. Whatever fails, nothing is
 * committed: the target is left empty (and migrated), never half-copied.
 */
export async function copyDatabase(o: CopyDatabaseOptions): Promise<TableCopy[]> {
  const { client, release } = await checkOut(o.pool);
  let broken: Error | undefined;
  try {
    await client.query('BEGIN');
    try {
      const copied = await copyAll(client, o);
      await client.query('COMMIT');
      return copied;
    } catch (error) {
      await client.query('ROLLBACK').catch((rollbackError: Error) => {
        broken = rollbackError;
      });
      throw error;
    }
  } finally {
    release(broken);
  }
}

async function copyAll(client: PgClient, o: CopyDatabaseOptions): Promise<TableCopy[]> {
  await checkTables(client, o.source);
  await lockTables(client, COPIED_TABLES);
  const busy = await firstTableWithRows(client, COPIED_TABLES);
  if (busy) throw new TargetNotEmptyError(busy);
  const extras = o.extraSecrets ?? [];
  const copied: TableCopy[] = [];
  const mismatches: { table: string; source: number; target: number }[] = [];
  for (const table of COPIED_TABLES) {
    const target = await targetColumns(client, table);
    const columns = sourceColumns(o.source, table, target);
    const total = o.source.count(table);
    let done = 0;
    const nulReplaced = new Map<string, number>();
    for (const batch of o.source.batches(
      table,
      columns,
      o.batchRows ?? DEFAULT_BATCH_ROWS,
      o.batchBytes ?? DEFAULT_BATCH_BYTES,
    )) {
      try {
        for (const [column, n] of await insertBatch(client, table, target, batch)) {
          nulReplaced.set(column, (nulReplaced.get(column) ?? 0) + n);
        }
      } catch (error) {
        throw new Error(`table ${table}: ${(error as Error).message}`, { cause: error });
      }
      done += batch.length;
      o.onProgress?.(table, done, total);
    }
    let expected = total;
    if (table === 'server_secrets' && extras.length > 0) {
      await client.query(
        'INSERT INTO server_secrets (name, value, created_at) SELECT * FROM unnest($1::text[], $2::text[], $3::timestamptz[])',
        [extras.map((s) => s.name), extras.map((s) => s.value), extras.map((s) => s.createdAt)],
      );
      expected += extras.length;
    }
    await resetIdentities(client, table, target);
    const counted = await countRows(client, table);
    if (counted !== expected) mismatches.push({ table, source: expected, target: counted });
    copied.push({ table, rows: counted, nulReplaced });
  }
  if (mismatches.length > 0) throw new CopyVerificationError(mismatches);
  return copied;
}

/** Every table of both schemas is either copied or deliberately left out. */
async function checkTables(client: PgClient, source: SqliteSource): Promise<void> {
  const known = new Set<string>([...COPIED_TABLES, ...Object.keys(NOT_COPIED)]);
  const unknown = [
    ...source.tables().filter((t) => !known.has(t)),
    ...(await targetTables(client)).filter((t) => !known.has(t)),
  ];
  if (unknown.length > 0) {
    throw new SchemaMismatchError(
      `this build does not know how to copy the table(s) ${[...new Set(unknown)].join(', ')}`,
    );
  }
}

/**
 * What to select from SQLite for the target's columns, in their order: each column of the same
 * name, and `seq` from the rowid where SQLite has none. A column on one side only is a schema
 * this build cannot copy.
 */
function sourceColumns(source: SqliteSource, table: string, target: readonly TargetColumn[]): SourceColumn[] {
  const own = new Set(source.columns(table));
  const targetNames = new Set(target.map((c) => c.name));
  const extra = [...own].filter((c) => !targetNames.has(c));
  const columns = target.map((c) => ({
    name: c.name,
    fromRowid: !own.has(c.name) && c.name === ROWID_COLUMN && source.hasRowid(table),
  }));
  const missing = columns.filter((c) => !own.has(c.name) && !c.fromRowid).map((c) => c.name);
  if (extra.length > 0 || missing.length > 0) {
    throw new SchemaMismatchError(
      `the table ${table} differs between the two schemas (${[
        ...extra.map((c) => `${c} only in SQLite`),
        ...missing.map((c) => `${c} only in PostgreSQL`),
      ].join(', ')})`,
    );
  }
  return columns;
}

import Database from 'better-sqlite3';
import type { Db } from '../database.js';
import type { Migration } from '../migrate.js';

/** Where a data directory's database stands against this build's migrations. */
export type SchemaState =
  | { kind: 'current'; version: number }
  | { kind: 'behind'; version: number; expected: number }
  | { kind: 'ahead'; unknown: number[] }
  | { kind: 'not_drover' };

/** A column as `copy-data` selects it: a column of the table, or its rowid under another name. */
export interface SourceColumn {
  name: string;
  /** `rowid AS seq` for the identity PostgreSQL keeps in place of SQLite's rowid. */
  fromRowid: boolean;
}

export interface LocalFileRow {
  id: string;
  blobKey: string;
  status: string;
  /** The recorded size; null until `complete`. */
  size: number | null;
}

/**
 * A stopped coordinator's SQLite file, opened read-only (nothing in the data directory changes),
 * read inside one read transaction: every count and every row come from one snapshot.
 */
export class SqliteSource {
  private constructor(private readonly db: Db) {}

  /** Throws (with the driver's `code`, e.g. SQLITE_CANTOPEN, SQLITE_NOTADB) when it cannot be read. */
  static open(file: string): SqliteSource {
    const db = new Database(file, { readonly: true, fileMustExist: true });
    try {
      db.pragma('busy_timeout = 5000');
      db.exec('BEGIN');
      // The snapshot starts at the first read.
      db.prepare('SELECT count(*) FROM sqlite_master').get();
    } catch (error) {
      db.close();
      throw error;
    }
    return new SqliteSource(db);
  }

  close(): void {
    if (this.db.inTransaction) this.db.exec('COMMIT');
    this.db.close();
  }

  schemaState(migrations: Migration[]): SchemaState {
    const hasTable = this.db
      .prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'")
      .get();
    if (!hasTable) return { kind: 'not_drover' };
    const done = new Set(
      (this.db.prepare('SELECT version FROM schema_migrations').all() as { version: number }[]).map((r) => r.version),
    );
    const known = migrations.map((m) => m.version);
    const unknown = [...done].filter((v) => !known.includes(v)).sort((a, b) => a - b);
    if (unknown.length > 0) return { kind: 'ahead', unknown };
    const expected = Math.max(0, ...known);
    if (known.some((v) => !done.has(v))) return { kind: 'behind', version: Math.max(0, ...done), expected };
    return { kind: 'current', version: expected };
  }

  tables(): string[] {
    return (
      this.db
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'")
        .all() as { name: string }[]
    ).map((r) => r.name);
  }

  columns(table: string): string[] {
    return (this.db.prepare('SELECT name FROM pragma_table_info(?)').all(table) as { name: string }[]).map(
      (r) => r.name,
    );
  }

  /** Whether the table has a rowid (it is not declared WITHOUT ROWID). */
  hasRowid(table: string): boolean {
    try {
      this.db.prepare(`SELECT rowid FROM ${quote(table)} LIMIT 0`).all();
      return true;
    } catch {
      return false;
    }
  }

  count(table: string): number {
    return (this.db.prepare(`SELECT count(*) AS n FROM ${quote(table)}`).get() as { n: number }).n;
  }

  /**
   * The table's rows in batches of at most `maxRows` rows and about `maxBytes` of text, each row
   * an array in the order of `columns`. One statement steps through the table while the caller
   * writes each batch elsewhere: memory holds one batch, whatever the table's size.
   */
  *batches(table: string, columns: SourceColumn[], maxRows: number, maxBytes: number): Generator<unknown[][]> {
    const select = columns.map((c) => (c.fromRowid ? `rowid AS ${quote(c.name)}` : quote(c.name))).join(', ');
    const statement = this.db.prepare(`SELECT ${select} FROM ${quote(table)}`).raw(true);
    let batch: unknown[][] = [];
    let bytes = 0;
    for (const row of statement.iterate() as IterableIterator<unknown[]>) {
      batch.push(row);
      for (const value of row) bytes += typeof value === 'string' ? value.length : 8;
      if (batch.length >= maxRows || bytes >= maxBytes) {
        yield batch;
        batch = [];
        bytes = 0;
      }
    }
    if (batch.length > 0) yield batch;
  }

  /**
   * The files of `local` bindings (the data directory's blobs) that are not `deleted`, in pages
   * (`after`: the last page's last row), oldest first.
   */
  localFiles(after: number, limit: number): { rows: LocalFileRow[]; last: number } {
    const rows = this.db
      .prepare(
        `SELECT f.rowid AS rowid, f.id AS id, f.blob_key AS blobKey, f.status AS status, f.size AS size
         FROM files f JOIN storage_bindings b ON b.id = f.binding_id
         WHERE b.backend = 'local' AND f.status <> 'deleted' AND f.rowid > ?
         ORDER BY f.rowid LIMIT ?`,
      )
      .all(after, limit) as (LocalFileRow & { rowid: number })[];
    return {
      rows: rows.map(({ rowid: _rowid, ...file }) => file),
      last: rows.at(-1)?.rowid ?? after,
    };
  }
}

/** A quoted identifier (table and column names come from the schema, never from input). */
export const quote = (name: string): string => `"${name.replaceAll('"', '""')}"`;

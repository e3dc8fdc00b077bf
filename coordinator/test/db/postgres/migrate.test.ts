import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../../src/db/database.js';
import { loadMigrations, migrate } from '../../../src/db/migrate.js';
import { loadPostgresMigrations, migratePostgres } from '../../../src/db/postgres/migrate.js';
import { createPool, type PgPool } from '../../../src/db/postgres/pool.js';
import { freshPostgresDatabase, type TestDatabase } from '../../postgres/database.js';

/**
 * PostgreSQL's migrations, and the rule that keeps the two schemas one: the same tables with the
 * same columns (beyond the few PostgreSQL keeps in place of SQLite's rowid), and every SQLite
 * migration after the one PostgreSQL's 0001 stands for has a PostgreSQL twin of the same name.
 */

/** The last SQLite migration that PostgreSQL's `0001_schema` stands for. */
const FOLDED_INTO_0001 = 19;
/** PostgreSQL only: identity columns in place of SQLite's implicit rowid, and the job number counters. */
const POSTGRES_ONLY_COLUMNS = [
  'api_tokens.seq',
  'applications.seq',
  'device_bindings.seq',
  'files.seq',
  'storage_bindings.seq',
  'triggers.seq',
];
const POSTGRES_ONLY_TABLES = ['job_number_counters'];

let database: TestDatabase;
let pool: PgPool;
const fresh: TestDatabase[] = [];
beforeAll(async () => {
  database = await freshPostgresDatabase();
  pool = createPool(database.url);
});
afterAll(async () => {
  await pool.end();
  for (const d of [database, ...fresh]) await d.drop();
});

async function emptyPool(): Promise<PgPool> {
  const d = await freshPostgresDatabase();
  fresh.push(d);
  return createPool(d.url);
}

describe('PostgreSQL migrations', () => {
  it('applies every migration once and records its version', async () => {
    const first = await migratePostgres(pool);
    expect(first.applied.map((m) => m.version)).toEqual(loadPostgresMigrations().map((m) => m.version));
    expect((await migratePostgres(pool)).applied).toEqual([]);
    const { rows } = await pool.query('SELECT version, name FROM schema_migrations ORDER BY version');
    expect(rows).toEqual(loadPostgresMigrations().map((m) => ({ version: m.version, name: m.name })));
  });

  it('lets several coordinators migrate at once: one applies, the others find it done', async () => {
    const other = await emptyPool();
    const pools = [other, createPool(fresh.at(-1)!.url), createPool(fresh.at(-1)!.url)];
    try {
      const results = await Promise.all(pools.map((p) => migratePostgres(p)));
      expect(results.map((r) => r.applied.length).sort()).toEqual([0, 0, loadPostgresMigrations().length]);
    } finally {
      for (const p of pools) await p.end();
    }
  });

  it('refuses a database that has a migration this build does not know', async () => {
    const p = await emptyPool();
    try {
      await migratePostgres(p);
      await p.query("INSERT INTO schema_migrations (version, name, applied_at) VALUES (9999, 'future', now())");
      await expect(migratePostgres(p)).rejects.toThrow(/does not know \(9999\)/);
    } finally {
      await p.end();
    }
  });

  it('rolls a failing migration back whole, leaving its version unrecorded', async () => {
    const p = await emptyPool();
    try {
      const broken = [{ version: 1, name: 'broken', sql: 'CREATE TABLE t (x integer); INSERT INTO nope VALUES (1);' }];
      await expect(migratePostgres(p, broken)).rejects.toThrow(/nope/);
      expect((await p.query("SELECT to_regclass('t') AS t")).rows).toEqual([{ t: null }]);
      expect((await p.query('SELECT count(*) AS n FROM schema_migrations')).rows).toEqual([{ n: 0 }]);
      // The lock was given back: the next run proceeds.
      expect((await migratePostgres(p, [])).applied).toEqual([]);
    } finally {
      await p.end();
    }
  });
});

describe('the two schemas', () => {
  it('have the same tables and columns', async () => {
    await migratePostgres(pool);
    const sqlite = openDatabase(':memory:');
    migrate(sqlite);
    const sqliteColumns = (
      sqlite
        .prepare(
          `SELECT m.name || '.' || c.name AS col FROM sqlite_master m, pragma_table_info(m.name) c
           WHERE m.type = 'table' AND m.name <> 'schema_migrations'`,
        )
        .all() as { col: string }[]
    )
      .map((r) => r.col)
      .sort();
    sqlite.close();
    const { rows } = await pool.query<{ col: string }>(
      `SELECT table_name || '.' || column_name AS col FROM information_schema.columns
       WHERE table_schema = current_schema() AND table_name <> 'schema_migrations'`,
    );
    const postgresColumns = rows
      .map((r) => r.col)
      .filter((c) => !POSTGRES_ONLY_COLUMNS.includes(c) && !POSTGRES_ONLY_TABLES.includes(c.split('.')[0]!))
      .sort();
    expect(postgresColumns).toEqual(sqliteColumns);
  });

  it('change together: each SQLite migration after 0019 has a PostgreSQL migration of the same name', () => {
    const postgres = new Set(loadPostgresMigrations().map((m) => m.name));
    const missing = loadMigrations()
      .filter((m) => m.version > FOLDED_INTO_0001)
      .filter((m) => !postgres.has(m.name))
      .map((m) => `${String(m.version).padStart(4, '0')}_${m.name}`);
    expect(missing, 'SQLite migrations without a PostgreSQL twin (docs/architecture.md, "Two databases")').toEqual([]);
  });
});

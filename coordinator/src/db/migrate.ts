import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Db } from './database.js';
import {
  isBreaking,
  planMigrations,
  versionAfter,
  type Migration,
  type MigrationResult,
  type RecordedMigration,
} from './migration-plan.js';
import type { PgPool } from './postgres/pool.js';
import { inTransaction } from './postgres/transaction.js';
import { all, command, one, query, run, script, values, type Flow } from './sql/index.js';
import { SqliteDatabase } from './sql/sqlite.js';

export type { Migration, MigrationResult } from './migration-plan.js';

/**
 * Versioned migrations: `coordinator/migrations/NNNN_name.sql` for SQLite and
 * `coordinator/migrations/postgres/NNNN_name.sql` for PostgreSQL. A change to the schema comes as
 * a migration of the same name in both folders (docs/architecture.md, "Two databases");
 * PostgreSQL's `0001_schema` is the SQLite schema of migrations 0001 to 0019 in one step.
 */
const MIGRATIONS_DIR = fileURLToPath(new URL('../../migrations/', import.meta.url));
const POSTGRES_MIGRATIONS_DIR = fileURLToPath(new URL('../../migrations/postgres/', import.meta.url));

export function loadMigrations(dir = MIGRATIONS_DIR): Migration[] {
  return fs
    .readdirSync(dir)
    .filter((f) => /^\d{4}_[a-z0-9_]+\.sql$/.test(f))
    .sort()
    .map((file) => {
      const sql = fs.readFileSync(new URL(file, `file://${dir.endsWith('/') ? dir : `${dir}/`}`), 'utf8');
      return { version: Number(file.slice(0, 4)), name: file.slice(5, -4), sql, breaking: isBreaking(file, sql) };
    });
}

export const loadPostgresMigrations = (): Migration[] => loadMigrations(POSTGRES_MIGRATIONS_DIR);

export interface MigrateOptions {
  /**
   * Called before each migration is applied, with whether the database recorded no migration
   * before this run (the coordinator logs the breaking ones applied to a database in use).
   */
  onApply?: (migration: Migration, fromEmpty: boolean) => void;
}

/**
 * Coordinators that start together on one PostgreSQL database migrate one after another: the
 * same advisory lock ("drover") as earlier builds took for their whole run. SQLite's write lock,
 * taken at BEGIN, does the same.
 */
const MIGRATION_LOCK = values<unknown, [number]>((d) =>
  d.name === 'sqlite' ? 'SELECT ?' : 'SELECT pg_advisory_xact_lock(?::bigint)',
);
const LOCK_KEY = 0x64726f766572;

/**
 * The migrations table is the migrator's own, not a numbered migration: it is read before any
 * migration runs, to decide whether one may. Its `breaking` column (added here to a table made
 * before it, not breaking) records whether each migration was marked breaking when applied.
 */
const migrationsTable = (sqlite: boolean) =>
  sqlite
    ? `CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL,
         applied_at TEXT NOT NULL, breaking INTEGER NOT NULL DEFAULT 0)`
    : `CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, name text NOT NULL,
         applied_at timestamptz NOT NULL, breaking boolean NOT NULL DEFAULT false)`;
const HAS_TABLE = values<unknown, []>((d) =>
  d.name === 'sqlite'
    ? "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'"
    : `SELECT 1 FROM information_schema.tables WHERE table_schema = current_schema()
         AND table_name = 'schema_migrations'`,
);
const HAS_BREAKING = values<unknown, []>((d) =>
  d.name === 'sqlite'
    ? "SELECT 1 FROM pragma_table_info('schema_migrations') WHERE name = 'breaking'"
    : `SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema()
         AND table_name = 'schema_migrations' AND column_name = 'breaking'`,
);
const addBreaking = (sqlite: boolean) =>
  `ALTER TABLE schema_migrations ADD COLUMN breaking ${sqlite ? 'INTEGER NOT NULL DEFAULT 0' : 'boolean NOT NULL DEFAULT false'}`;
const RECORDED = query<{ version: number; name: string; breaking: number }>(
  'SELECT version, name, breaking FROM schema_migrations',
);
const RECORDED_BEFORE_BREAKING = query<{ version: number; name: string; breaking: number }>(
  'SELECT version, name, 0 AS breaking FROM schema_migrations',
);
const MARK_BREAKING = command<[number]>('UPDATE schema_migrations SET breaking = TRUE WHERE version = ?');
// A flag is bound as 1 or 0: PostgreSQL reads the parameter '1' or '0' as a boolean.
const RECORD = command<[number, string, string, number]>(
  'INSERT INTO schema_migrations (version, name, applied_at, breaking) VALUES (?, ?, ?, ?)',
);

/**
 * The migrations a database records, without writing: none when it has no migrations table, and
 * none marked breaking in a table made before the `breaking` column (the migrator adds it, false
 * for every row).
 */
function* readRecorded(): Flow<RecordedMigration[]> {
  if ((yield* one(HAS_TABLE, [])) === null) return [];
  const hasBreaking = (yield* one(HAS_BREAKING, [])) !== null;
  const rows = yield* all(hasBreaking ? RECORDED : RECORDED_BEFORE_BREAKING, []);
  return rows.map((r) => ({ ...r, breaking: r.breaking === 1 }));
}

/**
 * What a SQLite database records, read as the migrator reads it, without writing (a restore
 * checks an archive's database before it replaces anything).
 */
export function recordedMigrations(db: Db): RecordedMigration[] {
  return new SqliteDatabase(db).runSync(readRecorded());
}

/**
 * One run of the migrator, the same on both databases, in ONE transaction: the pending migrations
 * are applied in order, each with its row in `schema_migrations`, or none is (a failed upgrade
 * leaves the database as the previous build left it, which that build still runs on). A database
 * with migrations this build does not know (applied by a newer drover-coordinator) is run on
 * unless one of them is a breaking change (db/migration-plan.ts).
 */
function* migrations(sqlite: boolean, known: Migration[], options: MigrateOptions): Flow<MigrationResult> {
  yield* one(MIGRATION_LOCK, [LOCK_KEY]);
  yield* script(migrationsTable(sqlite));
  if ((yield* one(HAS_BREAKING, [])) === null) yield* script(addBreaking(sqlite));
  const recorded = yield* readRecorded();
  const plan = planMigrations(recorded, known);
  for (const version of plan.remark) yield* run(MARK_BREAKING, [version]);
  for (const migration of plan.pending) {
    options.onApply?.(migration, plan.fromEmpty);
    yield* script(migration.sql);
    yield* run(RECORD, [migration.version, migration.name, new Date().toISOString(), migration.breaking ? 1 : 0]);
  }
  return {
    applied: plan.pending,
    newer: plan.newer,
    current: versionAfter(recorded, known),
    fromEmpty: plan.fromEmpty,
  };
}

/**
 * Migrates a SQLite database (its write lock taken at BEGIN). While it migrates, the connection
 * allows a migration to edit a table's definition in place (better-sqlite3's unsafe mode lifts
 * SQLite's defensive flag): the documented way to drop a NOT NULL without rebuilding the table
 * (0026_fleet_runs).
 */
export function migrate(db: Db, known = loadMigrations(), options: MigrateOptions = {}): MigrationResult {
  db.unsafeMode(true);
  try {
    return new SqliteDatabase(db).transactionSync(() => migrations(true, known, options), { immediate: true });
  } finally {
    db.unsafeMode(false);
  }
}

/**
 * Migrates a PostgreSQL database: several coordinators may at once, and take turns. The driver
 * (sql/postgres.ts imports pg) is loaded here, so that a coordinator on SQLite never loads it.
 */
export async function migratePostgres(
  pool: PgPool,
  known = loadPostgresMigrations(),
  options: MigrateOptions = {},
): Promise<MigrationResult> {
  const { runFlow } = await import('./sql/postgres.js');
  return inTransaction(pool, (tx) => runFlow(tx, migrations(false, known, options)));
}

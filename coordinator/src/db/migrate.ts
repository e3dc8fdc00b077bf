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

export type { Migration, MigrationResult } from './migration-plan.js';

/**
 * Versioned migrations: `coordinator/migrations/NNNN_name.sql`, applied in order, each in its own
 * transaction together with its row in `schema_migrations`. A database with migrations this build
 * does not know (applied by a newer drover-coordinator) is run on unless one of them is a
 * breaking change (db/migration-plan.ts).
 */
const MIGRATIONS_DIR = fileURLToPath(new URL('../../migrations/', import.meta.url));

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

export interface MigrateOptions {
  /**
   * Called before each migration is applied, with whether the database recorded no migration
   * before this run (the coordinator logs the breaking ones applied to a database in use).
   */
  onApply?: (migration: Migration, fromEmpty: boolean) => void;
}

/**
 * The migrations table is the migrator's own, not a numbered migration: it is read before any
 * migration runs, to decide whether one may. Its `breaking` column (added here to a table made
 * before it, default 0) records whether each migration was marked breaking when applied.
 */
function prepareMigrationsTable(db: Db): void {
  db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
    version INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    applied_at TEXT NOT NULL,
    breaking INTEGER NOT NULL DEFAULT 0
  )`);
  const hasBreaking = db.prepare("SELECT 1 FROM pragma_table_info('schema_migrations') WHERE name = 'breaking'").get();
  if (!hasBreaking) db.exec('ALTER TABLE schema_migrations ADD COLUMN breaking INTEGER NOT NULL DEFAULT 0');
}

export function migrate(db: Db, migrations = loadMigrations(), options: MigrateOptions = {}): MigrationResult {
  prepareMigrationsTable(db);
  const recorded = (
    db.prepare('SELECT version, name, breaking FROM schema_migrations').all() as {
      version: number;
      name: string;
      breaking: number;
    }[]
  ).map((r): RecordedMigration => ({ version: r.version, name: r.name, breaking: r.breaking === 1 }));
  const plan = planMigrations(recorded, migrations);
  if (plan.remark.length > 0) {
    const mark = db.prepare('UPDATE schema_migrations SET breaking = 1 WHERE version = ?');
    db.transaction(() => plan.remark.forEach((version) => mark.run(version)))();
  }
  const record = db.prepare('INSERT INTO schema_migrations (version, name, applied_at, breaking) VALUES (?, ?, ?, ?)');
  for (const migration of plan.pending) {
    options.onApply?.(migration, plan.fromEmpty);
    db.transaction(() => {
      db.exec(migration.sql);
      record.run(migration.version, migration.name, new Date().toISOString(), migration.breaking ? 1 : 0);
    })();
  }
  return {
    applied: plan.pending,
    newer: plan.newer,
    current: versionAfter(recorded, migrations),
    fromEmpty: plan.fromEmpty,
  };
}

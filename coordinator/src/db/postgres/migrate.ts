import { fileURLToPath } from 'node:url';
import { loadMigrations, type MigrateOptions } from '../migrate.js';
import {
  planMigrations,
  versionAfter,
  type Migration,
  type MigrationResult,
  type RecordedMigration,
} from '../migration-plan.js';
import type { PgClient, PgPool } from './pool.js';

/**
 * PostgreSQL's migrations: `coordinator/migrations/postgres/NNNN_name.sql`. A change to the
 * schema comes as a migration of the same name in both folders (docs/architecture.md, "Two
 * databases"); `0001_schema` is the SQLite schema of migrations 0001 to 0019 in one step.
 */
export const POSTGRES_MIGRATIONS_DIR = fileURLToPath(new URL('../../../migrations/postgres/', import.meta.url));

export const loadPostgresMigrations = (): Migration[] => loadMigrations(POSTGRES_MIGRATIONS_DIR);

/** Held while migrating, so coordinators that start together migrate one after another. */
const MIGRATION_LOCK = 0x64726f766572; // "drover"

/**
 * The migrations table is the migrator's own (as on SQLite, db/migrate.ts): made, and given its
 * `breaking` column when made before it, here rather than by a numbered migration, since it is
 * read before any of those may run. Under the lock, so coordinators starting together take turns.
 */
async function prepareMigrationsTable(client: PgClient): Promise<void> {
  await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
    version integer PRIMARY KEY,
    name text NOT NULL,
    applied_at timestamptz NOT NULL,
    breaking boolean NOT NULL DEFAULT false
  )`);
  const { rows } = await client.query(
    `SELECT 1 FROM information_schema.columns
     WHERE table_schema = current_schema() AND table_name = 'schema_migrations' AND column_name = 'breaking'`,
  );
  if (rows.length === 0) {
    await client.query('ALTER TABLE schema_migrations ADD COLUMN breaking boolean NOT NULL DEFAULT false');
  }
}

/**
 * Applies the pending migrations in order, each in its own transaction with its row in
 * `schema_migrations`, under an advisory lock. Migrations this build does not know (applied by a
 * newer drover-coordinator) are run beside unless one is a breaking change, as on SQLite
 * (db/migration-plan.ts).
 */
export async function migratePostgres(
  pool: PgPool,
  migrations: Migration[] = loadPostgresMigrations(),
  options: MigrateOptions = {},
): Promise<MigrationResult> {
  const client = await pool.connect();
  let failure: Error | undefined;
  try {
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
    try {
      await prepareMigrationsTable(client);
      const recorded = (await client.query<RecordedMigration>('SELECT version, name, breaking FROM schema_migrations'))
        .rows;
      const plan = planMigrations(recorded, migrations);
      if (plan.remark.length > 0) {
        await client.query('UPDATE schema_migrations SET breaking = true WHERE version = ANY($1::integer[])', [
          plan.remark,
        ]);
      }
      for (const migration of plan.pending) {
        options.onApply?.(migration, plan.fromEmpty);
        await client.query('BEGIN');
        try {
          // A query without parameters may hold several statements.
          await client.query(migration.sql);
          await client.query(
            'INSERT INTO schema_migrations (version, name, applied_at, breaking) VALUES ($1, $2, now(), $3)',
            [migration.version, migration.name, migration.breaking],
          );
          await client.query('COMMIT');
        } catch (error) {
          await client.query('ROLLBACK');
          throw error;
        }
      }
      return {
        applied: plan.pending,
        newer: plan.newer,
        current: versionAfter(recorded, migrations),
        fromEmpty: plan.fromEmpty,
      };
    } finally {
      await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]);
    }
  } catch (error) {
    failure = error as Error;
    throw error;
  } finally {
    // After a failure the connection is closed, not reused: that also ends its lock.
    client.release(failure);
  }
}

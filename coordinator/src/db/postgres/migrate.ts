import { fileURLToPath } from 'node:url';
import { loadMigrations, type Migration, type MigrationResult } from '../migrate.js';
import type { PgPool } from './pool.js';

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
 * Applies the pending migrations in order, each in its own transaction with its row in
 * `schema_migrations`, under an advisory lock. A database that records a migration this build
 * does not know is refused, as on SQLite.
 */
export async function migratePostgres(
  pool: PgPool,
  migrations: Migration[] = loadPostgresMigrations(),
): Promise<MigrationResult> {
  const client = await pool.connect();
  let failure: Error | undefined;
  try {
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
    try {
      await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
        version integer PRIMARY KEY,
        name text NOT NULL,
        applied_at timestamptz NOT NULL
      )`);
      const done = new Set(
        (await client.query<{ version: number }>('SELECT version FROM schema_migrations')).rows.map((r) => r.version),
      );
      const known = new Set(migrations.map((m) => m.version));
      const unknown = [...done].filter((v) => !known.has(v));
      if (unknown.length > 0) {
        throw new Error(
          `The database has migrations this build does not know (${unknown.join(', ')}); run a newer drover-coordinator`,
        );
      }
      const applied: Migration[] = [];
      for (const migration of migrations) {
        if (done.has(migration.version)) continue;
        await client.query('BEGIN');
        try {
          // A query without parameters may hold several statements.
          await client.query(migration.sql);
          await client.query('INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, now())', [
            migration.version,
            migration.name,
          ]);
          await client.query('COMMIT');
        } catch (error) {
          await client.query('ROLLBACK');
          throw error;
        }
        applied.push(migration);
      }
      return { applied, current: Math.max(0, ...known) };
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

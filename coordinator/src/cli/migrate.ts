import fs from 'node:fs';
import type { Command } from 'commander';
import type { Config } from '../config/config.js';
import type { MigrationResult } from '../db/migrate.js';
import { configOrExit, lockDataDirOrExit, withServerOptions } from './common.js';

export function configureMigrateCommand(program: Command): void {
  withServerOptions(program.command('migrate'))
    .description('apply pending database migrations and exit (start does this too)')
    .action(async (flags: Record<string, string | undefined>) => {
      const config = configOrExit(flags);
      const { applied, newer, current, fromEmpty } =
        config.database.kind === 'postgres' ? await migrateOnPostgres(config.database) : await migrateSqlite(config);
      const { BREAKING_NOTE, migrationLabel, runningBeside } = await import('../db/migration-plan.js');
      for (const m of applied) {
        // On a new database no older coordinator can be running: nothing to say about breaking ones.
        const note = m.breaking && !fromEmpty ? `, ${BREAKING_NOTE}` : '';
        process.stdout.write(`applied ${migrationLabel(m)}${note}\n`);
      }
      if (newer.length > 0) process.stdout.write(`${runningBeside(newer)}\n`);
      process.stdout.write(`database at version ${current}\n`);
    });
}

/** The database's modules are read by the command that uses them (`--help` answers without). */
async function migrateSqlite(config: Config): Promise<MigrationResult> {
  // A mistyped path would get a new, empty database migrated, and its operator "database at version N".
  if (!fs.existsSync(config.dataDir)) {
    process.stderr.write(
      `drover-coordinator: the data directory ${config.dataDir} does not exist: migrate works on an existing one (check --data-dir or DROVER_DATA_DIR; start creates a new one)\n`,
    );
    process.exit(2);
  }
  lockDataDirOrExit(config.dataDir, 'migrate'); // not under a running coordinator
  const { databaseFile, openDatabase } = await import('../db/database.js');
  const { migrate } = await import('../db/migrate.js');
  const db = openDatabase(databaseFile(config.dataDir));
  try {
    return migrate(db);
  } finally {
    db.close();
  }
}

/** Several coordinators may migrate one database at once: they take turns (db/postgres/migrate.ts). */
async function migrateOnPostgres(database: { url: string; redactedUrl: string }): Promise<MigrationResult> {
  const { createPool } = await import('../db/postgres/pool.js'); // pg: loaded for PostgreSQL only
  const { migratePostgres } = await import('../db/migrate.js');
  const pool = createPool(database.url, { max: 1 });
  try {
    return await migratePostgres(pool);
  } catch (error) {
    // The driver's messages name the host and the user, never the password.
    process.stderr.write(`drover-coordinator: cannot migrate ${database.redactedUrl}: ${(error as Error).message}\n`);
    process.exit(1);
  } finally {
    await pool.end();
  }
}

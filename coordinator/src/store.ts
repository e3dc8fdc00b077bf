import type { Logger } from 'pino';
import { logApplied, migrationLog, type Store } from './store-parts.js';
import type { Config } from './config/config.js';
import { startCheckpointer } from './db/checkpointer.js';
import { databaseFile, openDatabase } from './db/database.js';
import { migrate } from './db/migrate.js';
import { GroupCommitExecutor, type CommitObserver } from './db/writer/executor.js';
import { createSqliteRepositories } from './sqlite-repositories.js';

/** The WAL a long run of writes waits to see checkpointed: 16,384 frames (64 MiB of 4 KiB pages). */
const SETTLED_WAL_FRAMES = 16_384;
/** ...for at most this long at a time, so that a checkpoint that cannot finish never stops it. */
const SETTLED_MAX_WAIT_MS = 10_000;

/** How often the checkpoint thread copies the WAL into the database file (db/checkpointer.ts). */
const CHECKPOINT_INTERVAL_MS = 250;

/**
 * Opens and migrates the database of `config` (docs/operations.md, "Database"): the SQLite file
 * of the data directory, with its WAL checkpoint thread and the group-commit executor
 * (`onCommit` observes its commits), or the PostgreSQL database of `DROVER_DATABASE_URL`, through
 * a pool (`onCommit` observes each transaction, a batch of one), with the relay that carries events
 * between the coordinators sharing it.
 */
export async function openStore(config: Config, logger: Logger, onCommit?: CommitObserver): Promise<Store> {
  // PostgreSQL's driver is loaded only for a coordinator on PostgreSQL (store-postgres.ts).
  if (config.database.kind === 'postgres')
    return (await import('./store-postgres.js')).openPostgresStore(config, logger, onCommit);
  const db = openDatabase(databaseFile(config.dataDir));
  try {
    logApplied(logger, migrate(db, undefined, migrationLog(logger)));
    const checkpointer = startCheckpointer(db, { intervalMs: CHECKPOINT_INTERVAL_MS, logger });
    const writes = new GroupCommitExecutor(db, onCommit);
    let closed: Promise<void> | undefined;
    const close = async () => {
      try {
        await writes.close();
      } finally {
        await checkpointer.stop();
        db.close();
      }
    };
    return {
      kind: 'sqlite',
      repos: createSqliteRepositories(db, writes),
      db,
      relay: null,
      // Synchronous and local: a closed or unreadable file throws at once.
      check: () => {
        db.prepare('SELECT 1').get();
        return Promise.resolve({ clusterEvents: null });
      },
      writesSettled: () => checkpointer.walBelow(SETTLED_WAL_FRAMES, SETTLED_MAX_WAIT_MS),
      close: () => (closed ??= close()),
    };
  } catch (error) {
    db.close();
    throw error;
  }
}

export type { Store } from './store-parts.js';

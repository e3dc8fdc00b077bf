import fs from 'node:fs';
import type { Logger } from 'pino';
import { logApplied, migrationLog, type Store } from './store-parts.js';
import type { Config } from './config/config.js';
import { startCheckpointer } from './db/checkpointer.js';
import { databaseFile, openDatabase, type Db } from './db/database.js';
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
  const file = databaseFile(config.dataDir);
  const db = openDatabase(file);
  const opened = fs.statSync(file);
  try {
    logApplied(logger, migrate(db, undefined, migrationLog(logger)));
    const writes = new GroupCommitExecutor(db, onCommit);
    const checkpointer = startCheckpointer(db, {
      intervalMs: CHECKPOINT_INTERVAL_MS,
      logger,
      holdWrites: writes.hold,
    });
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
        checkSqliteHealth(db, file, opened, writes.lastFailure);
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

/**
 * Whether the SQLite database can serve: its file is still the one opened (removed or replaced
 * under a running coordinator, its writes would go to an unlinked file, lost at the next start),
 * a page of it reads, and the last group commit did not fail as a whole (a full disk, an I/O
 * error: every write fails until it is fixed). Throws what is wrong.
 */
function checkSqliteHealth(db: Db, file: string, opened: fs.Stats, lastFailure: Error | null): void {
  let now: fs.Stats;
  try {
    now = fs.statSync(file);
  } catch (error) {
    throw new Error(`the database file ${file} is gone: ${(error as Error).message}`, { cause: error });
  }
  if (now.ino !== opened.ino || now.dev !== opened.dev) {
    throw new Error(`the database file ${file} was replaced while the coordinator ran on it`);
  }
  db.prepare('SELECT count(*) FROM schema_migrations').get();
  if (lastFailure) throw new Error(`the last write failed: ${lastFailure.message}`, { cause: lastFailure });
}

export type { Store } from './store-parts.js';

import type { Logger } from 'pino';
import type { Config } from './config/config.js';
import { startCheckpointer } from './db/checkpointer.js';
import { databaseFile, openDatabase, type Db } from './db/database.js';
import { migrate, type MigrateOptions, migratePostgres, type MigrationResult } from './db/migrate.js';
import { applyingBreaking, migrationLabel, runningBeside } from './db/migration-plan.js';
import { PostgresNotifyRelay } from './db/postgres/notify-relay.js';
import { createPool } from './db/postgres/pool.js';
import { observeCommits } from './db/postgres/transaction.js';
import { GroupCommitExecutor, type CommitObserver } from './db/writer/executor.js';
import type { ClusterRelay } from './domain/model/cluster-relay.js';
import type { Repositories } from './domain/model/repositories.js';
import { createPostgresRepositories } from './postgres-repositories.js';
import { createSqliteRepositories } from './sqlite-repositories.js';

/** The database a coordinator runs on, migrated, with the repositories over it. */
export interface Store {
  kind: 'sqlite' | 'postgres';
  repos: Repositories;
  /** The SQLite connection; null on PostgreSQL. */
  db: Db | null;
  /**
   * The channel to the other coordinators on the same database (PostgreSQL LISTEN/NOTIFY,
   * db/postgres/notify-relay.ts); null on SQLite, where one coordinator holds everything.
   */
  relay: ClusterRelay | null;
  /**
   * Whether the database answers a trivial query within `timeoutMs` (the health check,
   * health.ts); rejects with the reason otherwise. On PostgreSQL, also whether the relay's
   * connection is up.
   */
  check(timeoutMs: number): Promise<{ clusterEvents: 'connected' | 'reconnecting' | null }>;
  /**
   * Resolves once the database can take a long run of writes again (SQLite: its WAL's checkpoint
   * caught up, Checkpointer.walBelow; PostgreSQL: at once). The retention sweep waits for it
   * between its batches.
   */
  writesSettled(): Promise<void>;
  /** Commits what is pending, then closes the database (idempotent). */
  close(): Promise<void>;
}

/** The WAL a long run of writes waits to see checkpointed: 16,384 frames (64 MiB of 4 KiB pages). */
const SETTLED_WAL_FRAMES = 16_384;
/** ...for at most this long at a time, so that a checkpoint that cannot finish never stops it. */
const SETTLED_MAX_WAIT_MS = 10_000;

/** How often the checkpoint thread copies the WAL into the database file (db/checkpointer.ts). */
const CHECKPOINT_INTERVAL_MS = 250;

/**
 * What migrating tells the log: a breaking migration before it is applied to a database in use
 * (on a new one no older coordinator can be running), every migration once applied.
 */
const migrationLog = (logger: Logger): MigrateOptions => ({
  onApply: (m, fromEmpty) => {
    if (m.breaking && !fromEmpty) logger.warn({ migration: migrationLabel(m), breaking: true }, applyingBreaking(m));
  },
});

const logApplied = (logger: Logger, { applied, newer }: MigrationResult) => {
  for (const m of applied) logger.info({ migration: migrationLabel(m), breaking: m.breaking }, 'migration applied');
  if (newer.length > 0) logger.warn({ newerMigrations: newer.map(migrationLabel) }, runningBeside(newer));
};

/**
 * Opens and migrates the database of `config` (docs/operations.md, "Database"): the SQLite file
 * of the data directory, with its WAL checkpoint thread and the group-commit executor
 * (`onCommit` observes its commits), or the PostgreSQL database of `DROVER_DATABASE_URL`, through
 * a pool (`onCommit` observes each transaction, a batch of one), with the relay that carries events
 * between the coordinators sharing it.
 */
export async function openStore(config: Config, logger: Logger, onCommit?: CommitObserver): Promise<Store> {
  if (config.database.kind === 'postgres') {
    const { redactedUrl } = config.database;
    const pool = createPool(config.database.url, {
      max: config.databasePoolSize,
      onIdleError: (error) => logger.warn({ err: error, database: redactedUrl }, 'a PostgreSQL connection failed'),
    });
    const relay = new PostgresNotifyRelay({ url: config.database.url, logger });
    let closed: Promise<void> | undefined;
    const close = () =>
      (closed ??= (async () => {
        try {
          await relay.close();
        } finally {
          await pool.end();
        }
      })());
    try {
      logApplied(logger, await migratePostgres(pool, undefined, migrationLog(logger)));
    } catch (error) {
      await close();
      throw new Error(`cannot migrate ${redactedUrl}: ${(error as Error).message}`, { cause: error });
    }
    try {
      await relay.start();
    } catch (error) {
      await close();
      const reason = (error as Error).message;
      throw new Error(`cannot listen for the other coordinators' events on ${redactedUrl}: ${reason}`, {
        cause: error,
      });
    }
    if (onCommit) observeCommits(pool, onCommit);
    const check = async (timeoutMs: number) => {
      await withTimeout(pool.query('SELECT 1'), timeoutMs);
      return { clusterEvents: relay.connected ? ('connected' as const) : ('reconnecting' as const) };
    };
    return {
      kind: 'postgres',
      repos: createPostgresRepositories(pool),
      db: null,
      relay,
      check,
      writesSettled: async () => {},
      close,
    };
  }
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

/** `promise`, or a rejection once `ms` have passed (the promise itself runs on). */
function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

import type { Logger } from 'pino';
import type { Config } from './config/config.js';
import { migratePostgres } from './db/migrate.js';
import { PostgresNotifyRelay } from './db/postgres/notify-relay.js';
import { createPool } from './db/postgres/pool.js';
import { observeCommits } from './db/postgres/transaction.js';
import type { CommitObserver } from './db/writer/executor.js';
import { createPostgresRepositories } from './postgres-repositories.js';
import { logApplied, migrationLog, type Store } from './store-parts.js';
import { withTimeout } from './util/with-timeout.js';

/**
 * The PostgreSQL store of `DROVER_DATABASE_URL` (store.ts, openStore): a pool (`onCommit` observes
 * each transaction, a batch of one), the database migrated, and the relay that carries events
 * between the coordinators sharing it. A module of its own, loaded only then: the driver it
 * imports is no part of a coordinator on SQLite.
 */
export async function openPostgresStore(config: Config, logger: Logger, onCommit?: CommitObserver): Promise<Store> {
  if (config.database.kind !== 'postgres') throw new Error('openPostgresStore: not a PostgreSQL configuration');
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

import type { Logger } from 'pino';
import type { Db } from './db/database.js';
import type { MigrateOptions, MigrationResult } from './db/migrate.js';
import { applyingBreaking, migrationLabel, runningBeside } from './db/migration-plan.js';
import type { ClusterRelay } from './domain/model/cluster-relay.js';
import type { Repositories } from './domain/model/repositories.js';

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

/**
 * What migrating tells the log: a breaking migration before it is applied to a database in use
 * (on a new one no older coordinator can be running), every migration once applied.
 */
export const migrationLog = (logger: Logger): MigrateOptions => ({
  onApply: (m, fromEmpty) => {
    if (m.breaking && !fromEmpty) logger.warn({ migration: migrationLabel(m), breaking: true }, applyingBreaking(m));
  },
});

export const logApplied = (logger: Logger, { applied, newer }: MigrationResult) => {
  for (const m of applied) logger.info({ migration: migrationLabel(m), breaking: m.breaking }, 'migration applied');
  if (newer.length > 0) logger.warn({ newerMigrations: newer.map(migrationLabel) }, runningBeside(newer));
};

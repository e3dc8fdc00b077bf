import type { Dialect } from './dialect.js';
import type { Flow } from './flow.js';
import type { Command, Params, Query } from './statement.js';

/**
 * A repository's way to its database, the same on SQLite and PostgreSQL (db/sql/sqlite.ts,
 * db/sql/postgres.ts): statements declared once (statement.ts) run one at a time, and flows
 * (flow.ts) run whole, in the transaction each method names. Rows come back alike on both: as
 * SQLite gives them (flags 1 or 0, JSON documents as their text, instants as ISO 8601 strings,
 * integers as numbers).
 */
export interface Database {
  readonly dialect: Dialect;
  /** The first row, or null. */
  one<R, P extends Params>(statement: Query<R, P>, params: P): Promise<R | null>;
  /** Every row. */
  all<R, P extends Params>(statement: Query<R, P>, params: P): Promise<R[]>;
  /** Runs a write on its own (committed alone); resolves with how many rows it changed. */
  run<P extends Params>(statement: Command<P>, params: P): Promise<number>;
  /** A flow of reads, outside any transaction (each statement sees what is committed when it runs). */
  read<T>(flow: () => Flow<T>): Promise<T>;
  /**
   * A flow in one transaction: committed when it returns, rolled back when it throws. `flow` makes
   * a new generator at each call: PostgreSQL runs it again after a deadlock. `immediate`: SQLite
   * takes the write lock at BEGIN (for a flow that reads before it writes while another process
   * may write: no SQLITE_BUSY on the upgrade); nothing on PostgreSQL.
   */
  transaction<T>(flow: () => Flow<T>, options?: { immediate: boolean }): Promise<T>;
  /**
   * A hot write (an admission, an agent's report, an audit entry): on SQLite an operation of the
   * group commit (db/writer/), committed with the other writes of the event-loop turn, which may
   * run it twice; on PostgreSQL a transaction of its own. With `atomic: false` the flow's
   * statements need not commit together and it takes no lock: PostgreSQL then runs each statement
   * by itself, without BEGIN and COMMIT round trips (SQLite's group commit is unchanged).
   */
  write<T>(flow: () => Flow<T>, options?: { atomic: boolean }): Promise<T>;
}

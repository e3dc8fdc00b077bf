import type BetterSqlite3 from 'better-sqlite3';
import type { Db } from '../database.js';
import type { WriteExecutor } from '../writer/executor.js';
import type { Database } from './database.js';
import { SQLITE } from './dialect.js';
import { runFlowSync, type Flow, type Op } from './flow.js';
import type { Command, Params, Query, Statement } from './statement.js';

type Prepared = BetterSqlite3.Statement<unknown[], unknown>;

/**
 * The repositories' database on one better-sqlite3 connection. Every statement is prepared once,
 * at its first use, and kept (indexed by its slot); everything runs synchronously, so a flow runs
 * inside the group commit (`write`) or a better-sqlite3 transaction (`transaction`) as a plain
 * function would, and the promises only hand the result over.
 */
export class SqliteDatabase implements Database {
  readonly dialect = SQLITE;
  private readonly prepared: (Prepared | undefined)[] = [];
  private readonly inTransaction: BetterSqlite3.Transaction<(flow: () => Flow<unknown>) => unknown>;

  constructor(
    readonly db: Db,
    /** The group commit of the hot writes; without one (the migrator) each runs as a transaction. */
    private readonly writes?: WriteExecutor,
  ) {
    // Built once: better-sqlite3's transaction wrappers are not free.
    this.inTransaction = db.transaction((flow: () => Flow<unknown>) => this.runSync(flow()));
  }

  /** The statement prepared on this connection (once). */
  prepare(statement: Statement<unknown, Params>): Prepared {
    let prepared = this.prepared[statement.slot];
    if (prepared === undefined) {
      prepared = this.db.prepare(statement.compiled(SQLITE).text);
      if (statement.shape === 'values') prepared.pluck(true);
      this.prepared[statement.slot] = prepared;
    }
    return prepared;
  }

  /** Runs `flow` now, synchronously: for SQLite code that is not a flow itself (inside its own transaction). */
  runSync<T>(flow: Flow<T>): T {
    return runFlowSync(this.execute, flow);
  }

  private readonly execute = (op: Op): unknown => {
    if (op.kind === 'lock') return undefined;
    if (op.kind === 'script') return void this.db.exec(op.sql);
    if (op.kind === 'rows') {
      const each = this.prepare(op.statement.each);
      return op.rows.filter((row) => each.run(...op.fixed, ...row).changes > 0);
    }
    const prepared = this.prepare(op.statement);
    if (op.kind === 'one') return prepared.get(op.params) ?? null;
    if (op.kind === 'all') return prepared.all(op.params);
    return prepared.run(op.params).changes;
  };

  async one<R, P extends Params>(statement: Query<R, P>, params: P): Promise<R | null> {
    return (this.prepare(statement).get(params) as R | undefined) ?? null;
  }

  async all<R, P extends Params>(statement: Query<R, P>, params: P): Promise<R[]> {
    return this.prepare(statement).all(params) as R[];
  }

  async run<P extends Params>(statement: Command<P>, params: P): Promise<number> {
    return this.prepare(statement).run(params).changes;
  }

  async read<T>(flow: () => Flow<T>): Promise<T> {
    return this.runSync(flow());
  }

  /** `transaction`, synchronously: for SQLite code that is not a flow itself. */
  transactionSync<T>(flow: () => Flow<T>, options?: { immediate: boolean }): T {
    return (options?.immediate ? this.inTransaction.immediate(flow) : this.inTransaction(flow)) as T;
  }

  async transaction<T>(flow: () => Flow<T>, options?: { immediate: boolean }): Promise<T> {
    return this.transactionSync(flow, options);
  }

  write<T>(flow: () => Flow<T>): Promise<T> {
    return this.writes ? this.writes.run(() => this.runSync(flow())) : this.transaction(flow);
  }
}

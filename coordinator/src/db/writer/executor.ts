import type { Db } from '../database.js';
import { createGroupCommit, type Outcome } from './group-commit.js';
import { createWriteOps, type WriteArg, type WriteOpName, type WriteResult } from './write-ops.js';

/**
 * Where the hot writes run (see write-ops.ts). Operations submitted in the same turn of the event
 * loop are committed together (group commit), each in its own savepoint; every promise settles
 * only after its transaction committed, so a route that awaits a write answers after it is
 * durable, while a burst of requests pays for one commit instead of one each (LIMITS.md: one
 * write transaction per request caps a route near a quarter of bare Fastify). Operations run
 * serially, in submission order.
 */
export interface WriteExecutor {
  run<K extends WriteOpName>(op: K, arg: WriteArg<K>): Promise<WriteResult<K>>;
  /** Resolves once everything submitted so far has been committed (or has failed). */
  flush(): Promise<void>;
  /** Flushes, then releases the executor's resources; later calls are refused. */
  close(): Promise<void>;
}

interface PendingWrite {
  op: () => unknown;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

function settle(batch: readonly PendingWrite[], outcomes: readonly Outcome[]): void {
  batch.forEach((p, i) => {
    const outcome = outcomes[i];
    if (outcome?.ok) p.resolve(outcome.value);
    else p.reject(outcome ? outcome.error : new Error('the write was not run'));
  });
}

const closedError = (): Error => new Error('the database writer is closed');

/**
 * Runs the operations on the caller's connection at the end of the event-loop turn, all of one
 * turn in one transaction (group-commit.ts), then settles their promises.
 */
export class GroupCommitExecutor implements WriteExecutor {
  private readonly ops;
  private readonly commit;
  private pending: PendingWrite[] = [];
  private scheduled = false;
  private closed = false;

  constructor(db: Db) {
    this.ops = createWriteOps(db);
    this.commit = createGroupCommit(db);
  }

  run<K extends WriteOpName>(op: K, arg: WriteArg<K>): Promise<WriteResult<K>> {
    if (this.closed) return Promise.reject(closedError());
    return new Promise<WriteResult<K>>((resolve, reject) => {
      const run = this.ops[op] as (arg: WriteArg<K>) => WriteResult<K>;
      this.pending.push({ op: () => run(arg), resolve: resolve as (value: unknown) => void, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.commitPending());
      }
    });
  }

  async flush(): Promise<void> {
    this.commitPending();
  }

  async close(): Promise<void> {
    this.commitPending();
    this.closed = true;
  }

  private commitPending(): void {
    this.scheduled = false;
    const batch = this.pending;
    if (batch.length === 0) return;
    this.pending = [];
    let outcomes: Outcome[];
    try {
      outcomes = this.commit(batch.map((p) => p.op));
    } catch (error) {
      for (const p of batch) p.reject(error);
      return;
    }
    settle(batch, outcomes);
  }
}

import { performance } from 'node:perf_hooks';
import type { Db } from '../database.js';
import { createGroupCommit, type Outcome } from './group-commit.js';

/**
 * Where the hot writes run: trigger-run admissions, agents' job reports and log lines, the
 * deadline sweeps, audit entries and request nonces. Operations submitted in the same turn of
 * the event loop are committed together (group commit, group-commit.ts); every promise settles
 * only after its transaction committed, so a route that awaits a write answers after it is
 * durable, while a burst of requests pays for one commit instead of one each (one write
 * transaction per request caps a route near a quarter of bare Fastify). Operations run
 * serially, in submission order.
 *
 * An operation is a synchronous function over statements prepared on the executor's connection
 * (the repositories prepare them once): it must not await, and it may run twice from the same
 * database state (group-commit.ts), so everything it decides must come from the database and
 * its argument.
 */
export interface WriteExecutor {
  /** Runs `op` in the next group commit; resolves with what it returned once that commit is durable. */
  run<T>(op: () => T): Promise<T>;
  /** Resolves once everything submitted so far has been committed (or has failed). */
  flush(): Promise<void>;
  /** Flushes, then releases the executor's resources; later calls are refused. */
  close(): Promise<void>;
}

/** Holds the group commit: operations submitted meanwhile wait, in order, until `release`. */
export type HoldWrites = () => () => void;

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

/** Told of every group commit: how long it took (seconds) and how many operations it carried. */
export type CommitObserver = (seconds: number, batchSize: number) => void;

/**
 * Runs the operations on the caller's connection at the end of the event-loop turn, all of one
 * turn in one transaction (group-commit.ts), then settles their promises.
 */
export class GroupCommitExecutor implements WriteExecutor {
  private readonly commit;
  private pending: PendingWrite[] = [];
  private scheduled = false;
  private closed = false;
  /** Holds in force (`hold`): while any is, the commits wait. */
  private held = 0;
  /**
   * Why the last group commit failed as a whole (BEGIN or COMMIT: a full disk, an I/O error, a
   * database made read-only), null once one succeeds: the health check reports it.
   */
  lastFailure: Error | null = null;

  constructor(
    db: Db,
    /** docs/metrics.md: `drover_db_commit_seconds`, `drover_db_commit_batch_size`; no clock is read without it. */
    private readonly onCommit?: CommitObserver,
  ) {
    this.commit = createGroupCommit(db);
  }

  run<T>(op: () => T): Promise<T> {
    if (this.closed) return Promise.reject(closedError());
    return new Promise<T>((resolve, reject) => {
      this.pending.push({ op, resolve: resolve as (value: unknown) => void, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.commitPending());
      }
    });
  }

  /**
   * Holds the commits until the returned function is called: what is submitted meanwhile waits,
   * in order, and the event loop goes on. For the checkpoint thread's copy of the WAL to its end,
   * which no write may interleave with (checkpointer.ts). `flush` and `close` commit regardless.
   */
  hold: HoldWrites = () => {
    this.held++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.held--;
      if (this.held === 0 && this.pending.length > 0 && !this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.commitPending());
      }
    };
  };

  async flush(): Promise<void> {
    this.commitPending(true);
  }

  async close(): Promise<void> {
    this.commitPending(true);
    this.closed = true;
  }

  private commitPending(evenHeld = false): void {
    this.scheduled = false;
    if (this.held > 0 && !evenHeld) return; // the hold's release schedules it again
    const batch = this.pending;
    if (batch.length === 0) return;
    this.pending = [];
    let outcomes: Outcome[];
    const started = this.onCommit ? performance.now() : 0;
    try {
      outcomes = this.commit(batch.map((p) => p.op));
      this.lastFailure = null;
    } catch (error) {
      this.lastFailure = error instanceof Error ? error : new Error(String(error));
      for (const p of batch) p.reject(error);
      return;
    } finally {
      this.onCommit?.((performance.now() - started) / 1000, batch.length);
    }
    settle(batch, outcomes);
  }
}

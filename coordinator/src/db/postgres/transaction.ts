import { performance } from 'node:perf_hooks';
import { checkOut, type PgClient, type PgPool } from './pool.js';

/** Told of each committed transaction: how long it took from BEGIN to COMMIT (seconds), and 1. */
export type PgCommitObserver = (seconds: number, batchSize: number) => void;
const observers = new WeakMap<PgPool, PgCommitObserver>();

/** Has `observer` told of every transaction committed on `pool` (docs/metrics.md, `drover_db_commit_*`). */
export function observeCommits(pool: PgPool, observer: PgCommitObserver): void {
  observers.set(pool, observer);
}

/** How often a transaction that lost a deadlock or a serialization check is run again. */
const ATTEMPTS = 3;
const RETRYABLE = new Set(['40001', '40P01']); // serialization_failure, deadlock_detected

const isRetryable = (error: unknown): boolean => RETRYABLE.has((error as { code?: string }).code ?? '');

/**
 * Runs `work` in one transaction on one connection of the pool (READ COMMITTED), committed when it
 * resolves and rolled back when it throws. Where several coordinators may race, `work` takes the
 * row locks or relies on the unique constraints its decision needs (the flows of db/repositories/).
 * A transaction PostgreSQL aborts as a deadlock victim or a serialization failure is run again,
 * so `work` must decide everything from what it reads.
 */
export async function inTransaction<T>(pool: PgPool, work: (client: PgClient) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const { client, release } = await checkOut(pool);
    let broken: Error | undefined;
    try {
      const observer = observers.get(pool);
      const started = observer ? performance.now() : 0;
      await client.query('BEGIN');
      try {
        const result = await work(client);
        await client.query('COMMIT');
        // Each transaction commits on its own here: a "batch" of one.
        observer?.((performance.now() - started) / 1000, 1);
        return result;
      } catch (error) {
        await client.query('ROLLBACK').catch((rollbackError: Error) => {
          broken = rollbackError;
        });
        throw error;
      }
    } catch (error) {
      if (attempt < ATTEMPTS && isRetryable(error) && !broken) continue;
      throw error;
    } finally {
      // A connection whose rollback failed is closed, never handed to the next caller.
      release(broken);
    }
  }
}

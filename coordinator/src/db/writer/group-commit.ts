import type { Db } from '../database.js';

/** How one operation of a batch ended. */
export type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

/**
 * Runs a batch of synchronous operations one after another inside ONE transaction, so they
 * commit together; a failing operation rolls back only itself. Operations run serially, so each
 * may read, decide and write without races.
 *
 * The batch first runs without savepoints (a savepoint per operation costs ~2 µs, and operations
 * almost never fail); when one throws, the whole transaction is rolled back and the batch runs
 * again with each operation in its own savepoint. Operations must therefore be safe to run twice
 * from the same database state (they are: everything they decide comes from the database).
 *
 * Throws only when the transaction itself fails (BEGIN or COMMIT, or an operation's error that
 * made SQLite roll back the whole transaction: a full disk, an I/O error): then nothing was written.
 */
export function createGroupCommit(db: Db): (ops: readonly (() => unknown)[]) => Outcome[] {
  // Built once: better-sqlite3's transaction wrappers are not free.
  const allOrNothing = db.transaction((ops: readonly (() => unknown)[]) => {
    const outcomes: Outcome[] = [];
    for (const op of ops) outcomes.push({ ok: true, value: op() });
    return outcomes;
  });
  const inSavepoint = db.transaction((op: () => unknown) => op());
  const eachInSavepoint = db.transaction((ops: readonly (() => unknown)[]) => {
    const outcomes: Outcome[] = [];
    for (const op of ops) {
      try {
        outcomes.push({ ok: true, value: inSavepoint(op) });
      } catch (error) {
        // Some errors (SQLITE_FULL, SQLITE_IOERR, SQLITE_NOMEM) make SQLite roll back the whole
        // transaction, not only the savepoint: what ran before is gone, and what follows would
        // run outside any transaction, committing on its own while its caller is told it failed
        // (the final COMMIT finding no transaction). The batch fails as a whole instead.
        if (!db.inTransaction) throw error;
        outcomes.push({ ok: false, error });
      }
    }
    return outcomes;
  });
  return (ops) => {
    try {
      return allOrNothing(ops);
    } catch {
      return eachInSavepoint(ops);
    }
  };
}

import type { Db } from './database.js';

interface PendingOp {
  op: () => unknown;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

/**
 * Group commit for SQLite writes. Operations submitted in the same turn of the event loop run
 * one after another inside ONE transaction, each in its own savepoint (a failing operation rolls
 * back only itself), and every caller's promise settles only after that transaction committed.
 * Since operations run serially, an operation may read, decide and write (a rate-limit check,
 * an idempotency lookup) without races; a burst of requests pays for one commit instead of one
 * each (LIMITS.md: one write transaction per request caps a route near a quarter of bare Fastify).
 *
 * Operations are synchronous functions over prepared statements; they must not await.
 */
export class WriteBatcher {
  private pending: PendingOp[] = [];
  private scheduled = false;

  /** Runs one operation in a savepoint of the enclosing transaction (built once: it is not free). */
  private readonly inSavepoint: (op: () => unknown) => unknown;

  constructor(private readonly db: Db) {
    this.inSavepoint = db.transaction((op: () => unknown) => op());
  }

  run<T>(op: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.pending.push({ op, resolve: resolve as (value: unknown) => void, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  /** Runs and commits everything submitted so far (also used at shutdown). */
  flush(): void {
    this.scheduled = false;
    const batch = this.pending;
    if (batch.length === 0) return;
    this.pending = [];
    const outcomes: ({ ok: true; value: unknown } | { ok: false; error: unknown })[] = [];
    try {
      this.db.transaction(() => {
        for (const p of batch) {
          try {
            outcomes.push({ ok: true, value: this.inSavepoint(p.op) });
          } catch (error) {
            outcomes.push({ ok: false, error });
          }
        }
      })();
    } catch (error) {
      for (const p of batch) p.reject(error);
      return;
    }
    batch.forEach((p, i) => {
      const outcome = outcomes[i]!;
      if (outcome.ok) p.resolve(outcome.value);
      else p.reject(outcome.error);
    });
  }
}

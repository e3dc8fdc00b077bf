import type { Command, ManyRows, Params, Query, Statement } from './statement.js';

/** One step of a flow: a statement to run, a lock to take, or a script of this build's own. */
export type Op =
  | { readonly kind: 'one' | 'all' | 'run'; readonly statement: Statement<unknown, Params>; readonly params: Params }
  | { readonly kind: 'lock'; readonly name: readonly string[] }
  | { readonly kind: 'script'; readonly sql: string }
  | {
      readonly kind: 'rows';
      readonly statement: ManyRows<readonly unknown[], readonly unknown[], unknown>;
      readonly fixed: readonly unknown[];
      readonly rows: readonly (readonly unknown[])[];
    };

/**
 * Several statements written once for both databases, with the reads, the decisions between them
 * and the writes: a generator that yields each statement and gets its result back
 * (`const row = yield* one(BY_ID, [id])`). The SQLite runner answers synchronously, so a flow
 * runs inside the group commit or a better-sqlite3 transaction as plain code did; the PostgreSQL
 * runner answers each statement after its round trip, inside a transaction of the pool
 * (db/sql/database.ts). A flow must do nothing but compute and yield: no `await`, no I/O of its
 * own, and it may run twice (the group commit's retry, PostgreSQL's after a deadlock), so what it
 * decides comes from what it reads and its arguments.
 */
export type Flow<T> = Generator<Op, T, unknown>;

/** The first row, or null when there is none. */
export function* one<R, P extends Params>(statement: Query<R, P>, params: P): Flow<R | null> {
  return (yield { kind: 'one', statement, params }) as R | null;
}

/** Every row. */
export function* all<R, P extends Params>(statement: Query<R, P>, params: P): Flow<R[]> {
  return (yield { kind: 'all', statement, params }) as R[];
}

/** Runs a write; gives how many rows it changed. */
export function* run<P extends Params>(statement: Command<P>, params: P): Flow<number> {
  return (yield { kind: 'run', statement, params }) as number;
}

/** Writes `rows` after the `fixed` parameters (`ManyRows`); gives the rows stored, in order. */
export function* rows<F extends readonly unknown[], Row extends readonly unknown[], K>(
  statement: ManyRows<F, Row, K>,
  fixed: F,
  rows: readonly Row[],
): Flow<Row[]> {
  return (yield { kind: 'rows', statement, fixed, rows } as unknown as Op) as Row[];
}

/**
 * The rows a statement of many (`ManyRows`) stored, from the keys it returned: the first row of
 * each key, as a conflict refuses the rows after it.
 */
export function storedRows<Row extends readonly unknown[], K>(
  rows: readonly Row[],
  keys: readonly K[],
  key: (row: Row) => K,
): Row[] {
  const left = new Set(keys);
  return rows.filter((row) => left.delete(key(row)));
}

/**
 * A lock held until the transaction ends, named by `name` (its parts, in order): on PostgreSQL a
 * transaction-scoped advisory lock, so that coordinators deciding on the same thing take turns;
 * nothing on SQLite, whose single writer runs one flow at a time. Take several always in the same
 * order.
 */
export function* lock(...name: string[]): Flow<void> {
  yield { kind: 'lock', name };
}

/**
 * Runs `sql`, several statements without parameters, as written for the database at hand (never
 * compiled): a migration's file. Never text built from input.
 */
export function* script(sql: string): Flow<void> {
  yield { kind: 'script', sql };
}

/** Drives `flow` to its end, answering each step at once (SQLite). */
export function runFlowSync<T>(execute: (op: Op) => unknown, flow: Flow<T>): T {
  let step = flow.next();
  while (!step.done) {
    let result: unknown;
    try {
      result = execute(step.value);
    } catch (error) {
      step = flow.throw(error);
      continue;
    }
    step = flow.next(result);
  }
  return step.value;
}

/** Drives `flow` to its end, answering each step when its promise settles (PostgreSQL). */
export async function runFlowAsync<T>(execute: (op: Op) => Promise<unknown>, flow: Flow<T>): Promise<T> {
  let step = flow.next();
  while (!step.done) {
    let result: unknown;
    try {
      result = await execute(step.value);
    } catch (error) {
      step = flow.throw(error);
      continue;
    }
    step = flow.next(result);
  }
  return step.value;
}

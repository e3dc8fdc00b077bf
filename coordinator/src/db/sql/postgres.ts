import pg from 'pg';
import type { PgPool, Queryable } from '../postgres/pool.js';
import { inTransaction } from '../postgres/transaction.js';
import type { Database } from './database.js';
import { POSTGRES } from './dialect.js';
import { runFlowAsync, storedRows, type Flow, type Op } from './flow.js';
import type { Command, Params, Query, Statement } from './statement.js';

const BOOL = 16;
const INT8 = 20;
const NUMERIC = 1700;
const JSON_OID = 114;
const JSONB = 3802;
const TIMESTAMPTZ = 1184;
const parseTimestamp = pg.types.getTypeParser(TIMESTAMPTZ) as (text: string) => Date;

/**
 * Values read as SQLite gives them, so that one row type and one mapping serve both databases:
 * flags as 1 or 0, JSON documents as their text (`json` keeps it as written), instants as ISO 8601
 * strings, bigint and numeric as numbers (every value Drover stores in one is a safe integer).
 * Set on each query, never on the pool or the driver's global parsers.
 */
export const SQLITE_SHAPED_TYPES = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (oid === BOOL) return (text: string) => (text === 't' ? 1 : 0);
    if (oid === INT8 || oid === NUMERIC) return (text: string) => Number(text);
    if (oid === JSON_OID || oid === JSONB) return (text: string) => text;
    if (oid === TIMESTAMPTZ) return (text: string) => parseTimestamp(text).toISOString();
    return pg.types.getTypeParser(oid, format);
  },
} as pg.CustomTypesConfig;

const LOCK_SQL = 'SELECT pg_advisory_xact_lock(hashtextextended($1, 0))';

function valuesOf(statement: Statement<unknown, Params>, names: readonly string[] | null, params: Params): unknown[] {
  if (names === null) return params as unknown[];
  const named = params as Readonly<Record<string, unknown>>;
  return names.map((name) => {
    if (!(name in named)) throw new RangeError(`missing named parameter "${name}" for: ${statement.source.toString()}`);
    return named[name];
  });
}

async function query(on: Queryable, statement: Statement<unknown, Params>, params: Params) {
  const { text, names } = statement.compiled(POSTGRES);
  return on.query({
    text,
    values: valuesOf(statement, names, params),
    types: SQLITE_SHAPED_TYPES,
    ...(statement.shape === 'values' ? { rowMode: 'array' as const } : {}),
  });
}

/** Runs one step of a flow on `on` (the pool, or a transaction's client). */
async function execute(on: Queryable, op: Op): Promise<unknown> {
  if (op.kind === 'lock') {
    await on.query(LOCK_SQL, [JSON.stringify(op.name)]);
    return undefined;
  }
  // Without parameters, a query may hold several statements.
  if (op.kind === 'script') return void (await on.query(op.sql));
  if (op.kind === 'rows') {
    if (op.rows.length === 0) return [];
    const { many, key } = op.statement;
    const keys = (await execute(on, {
      kind: 'all',
      statement: many,
      params: [...op.fixed, JSON.stringify(op.rows)],
    })) as unknown[];
    return storedRows(op.rows, keys, key);
  }
  const result = await query(on, op.statement, op.params);
  if (op.kind === 'run') return result.rowCount ?? 0;
  const rows = op.statement.shape === 'values' ? (result.rows as unknown[][]).map((r) => r[0]) : result.rows;
  return op.kind === 'one' ? (rows[0] ?? null) : rows;
}

/** Runs `flow` on `on` (a transaction's client): for PostgreSQL code that is not a flow itself. */
export function runFlow<T>(on: Queryable, flow: Flow<T>): Promise<T> {
  return runFlowAsync((op) => execute(on, op), flow);
}

/**
 * The repositories' database on a PostgreSQL pool. A statement's text is numbered once
 * (`$1, $2, ...`); a flow runs in a transaction of one pooled connection (db/postgres/transaction.ts:
 * READ COMMITTED, run again after a deadlock), taking the locks it yields.
 */
export class PostgresDatabase implements Database {
  readonly dialect = POSTGRES;

  constructor(readonly pool: PgPool) {}

  async one<R, P extends Params>(statement: Query<R, P>, params: P): Promise<R | null> {
    return (await execute(this.pool, { kind: 'one', statement, params })) as R | null;
  }

  async all<R, P extends Params>(statement: Query<R, P>, params: P): Promise<R[]> {
    return (await execute(this.pool, { kind: 'all', statement, params })) as R[];
  }

  async run<P extends Params>(statement: Command<P>, params: P): Promise<number> {
    return (await query(this.pool, statement, params)).rowCount ?? 0;
  }

  read<T>(flow: () => Flow<T>): Promise<T> {
    return runFlow(this.pool, flow());
  }

  transaction<T>(flow: () => Flow<T>): Promise<T> {
    return inTransaction(this.pool, (tx) => runFlow(tx, flow()));
  }

  write<T>(flow: () => Flow<T>, options?: { atomic: boolean }): Promise<T> {
    return options?.atomic === false ? this.read(flow) : this.transaction(flow);
  }
}

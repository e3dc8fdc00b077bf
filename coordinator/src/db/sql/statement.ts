import type { Dialect } from './dialect.js';

/**
 * A statement's parameters: positional (`?` in the text, an array in order) or named (`@name` in
 * the text, an object; a name may appear more than once). One statement uses one kind.
 */
export type Params = readonly unknown[] | Named;

/** Named parameters: `@name` in the text, an object with a property of each name (an interface will do). */
export type Named = object;

/** A statement's text: one for both databases, or built from the dialect's fragments (dialect.ts). */
export type SqlSource = string | ((dialect: Dialect) => string);

/** The text a database runs, and for PostgreSQL's numbered parameters the names they stand for. */
export interface CompiledSql {
  readonly text: string;
  /** Named parameters in `$n` order (PostgreSQL); null for positional ones or on SQLite. */
  readonly names: readonly string[] | null;
}

/** What a statement gives back: rows as objects, the first column of each row, or only a count of changes. */
export type Shape = 'rows' | 'values' | 'none';

let nextSlot = 0;

/**
 * A statement, declared once at a module's top level and run on either database
 * (db/sql/database.ts). Its text is compiled once per dialect (the placeholders), and on SQLite
 * prepared once per connection (`slot` indexes the connection's prepared statements).
 * `R` is one row (or value) as SQLite gives it; PostgreSQL's rows are read into the same shape
 * (db/sql/postgres.ts).
 */
export class Statement<R, P extends Params> {
  /** This statement's place among a connection's prepared statements. */
  readonly slot = nextSlot++;
  private sqlite: CompiledSql | undefined;
  private postgres: CompiledSql | undefined;
  /** Type-only: keeps `R` and `P` part of the type. */
  declare readonly __types?: { row: R; params: P };

  constructor(
    readonly source: SqlSource,
    readonly shape: Shape,
  ) {}

  /** The text for `dialect`, compiled at its first use. */
  compiled(dialect: Dialect): CompiledSql {
    if (dialect.name === 'sqlite') return (this.sqlite ??= compileFor(this.source, dialect));
    return (this.postgres ??= compileFor(this.source, dialect));
  }
}

/** A statement that reads rows (a SELECT, or a write with RETURNING): run with `one` or `all`. */
export type Query<R, P extends Params = readonly unknown[]> = Statement<R, P> & { readonly shape: 'rows' | 'values' };
/** A statement that writes and returns nothing: run with `run`, which tells how many rows it changed. */
export type Command<P extends Params = readonly unknown[]> = Statement<never, P> & { readonly shape: 'none' };

/** A statement whose rows are objects of type `R` (column names as written, or their aliases). */
export const query = <R, P extends Params = readonly unknown[]>(source: SqlSource): Query<R, P> =>
  new Statement<R, P>(source, 'rows') as Query<R, P>;

/** A statement of one column: its rows are that column's values (`SELECT max(x) ...`). */
export const values = <V, P extends Params = readonly unknown[]>(source: SqlSource): Query<V, P> =>
  new Statement<V, P>(source, 'values') as Query<V, P>;

/** A statement that writes (INSERT, UPDATE, DELETE without RETURNING). */
export const command = <P extends Params = readonly unknown[]>(source: SqlSource): Command<P> =>
  new Statement<never, P>(source, 'none') as Command<P>;

function compileFor(source: SqlSource, dialect: Dialect): CompiledSql {
  const text = typeof source === 'string' ? source : source(dialect);
  return dialect.name === 'sqlite' ? { text, names: null } : numberParameters(text);
}

const NAME_START = /[A-Za-z_]/;
const NAME_PART = /[A-Za-z0-9_]/;

/**
 * PostgreSQL's placeholders for portable ones: each `?` becomes the next `$n`; each distinct `@name`
 * gets a number of its own (`names` lists them in that order). Quoted strings, quoted names and
 * `--` comments are left as they are. A text mixing `?` and `@name` is refused.
 */
export function numberParameters(sql: string): CompiledSql {
  let out = '';
  let positional = 0;
  const names: string[] = [];
  for (let i = 0; i < sql.length; i++) {
    const c = sql[i] as string;
    if (c === "'" || c === '"') {
      const end = sql.indexOf(c, i + 1);
      const stop = end === -1 ? sql.length : end + 1;
      out += sql.slice(i, stop);
      i = stop - 1;
    } else if (c === '-' && sql[i + 1] === '-') {
      const end = sql.indexOf('\n', i);
      const stop = end === -1 ? sql.length : end;
      out += sql.slice(i, stop);
      i = stop - 1;
    } else if (c === '?') {
      out += `$${++positional}`;
    } else if (c === '@' && NAME_START.test(sql[i + 1] ?? '')) {
      let j = i + 1;
      while (j < sql.length && NAME_PART.test(sql[j] as string)) j++;
      const name = sql.slice(i + 1, j);
      let index = names.indexOf(name);
      if (index === -1) index = names.push(name) - 1;
      out += `$${index + 1}`;
      i = j - 1;
    } else {
      out += c;
    }
  }
  if (positional > 0 && names.length > 0) throw new Error(`a statement mixes ? and @name parameters: ${sql}`);
  return { text: out, names: names.length > 0 ? names : null };
}

/**
 * A write of many rows that share their leading parameters (`F`: a job's id), skipping those a
 * conflict refuses; it gives the rows stored. What is cheapest differs, so each database has its
 * statement: SQLite runs `each` once per row (its prepared statement: long texts bound as they
 * are, none read back), PostgreSQL runs `many` once with the rows as one JSON array after the
 * leading parameters (one round trip), returning the `key` of each row it stored.
 */
export interface ManyRows<F extends readonly unknown[], Row extends readonly unknown[], K> {
  readonly each: Command<readonly unknown[]>;
  readonly many: Query<K, readonly unknown[]>;
  readonly key: (row: Row) => K;
  /** Type-only: keeps `F` part of the type. */
  readonly __fixed?: F;
}

/** A write of many rows (`ManyRows`): `each` is SQLite's statement of one row, `many` PostgreSQL's of a JSON array of them. */
export const manyRows = <F extends readonly unknown[], Row extends readonly unknown[], K>(
  each: string,
  many: string,
  key: (row: Row) => K,
): ManyRows<F, Row, K> => ({ each: command(each), many: values<K, readonly unknown[]>(many), key });

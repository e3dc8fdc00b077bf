/**
 * What the SQL of the two databases really differs in, named once. A statement is one text for
 * both (docs/architecture.md, "Two databases"); where a clause differs it takes the fragment from
 * here: `query((d) => \`... ORDER BY created_at, ${d.insertionOrder}\`)`. Add a fragment only for
 * a difference that is real; portable SQL (`TRUE`, `COALESCE`, `ON CONFLICT`, `RETURNING`,
 * `"window"`, `excluded.x`, `table.column` in an upsert) needs none.
 */
export interface Dialect {
  readonly name: 'sqlite' | 'postgres';
  /**
   * The column that orders a table's rows by insertion where nothing else does: SQLite's implicit
   * `rowid`, PostgreSQL's identity column `seq` (tables whose SQLite twin has an `INTEGER PRIMARY
   * KEY seq`, such as `jobs`, name `seq` on both).
   */
  readonly insertionOrder: string;
  /**
   * Appended to a text column in an `ORDER BY` that the API shows (workflows by name, agents by
   * name): its order by the bytes of its UTF-8 text, as SQLite's BINARY collation sorts, whatever
   * the collation the PostgreSQL database was created with (`en_US.UTF-8`, many servers' default,
   * sorts `alpha` before `B2` and ignores `-` and `_`). Nothing on SQLite.
   */
  readonly byteOrder: string;
  /** `FOR UPDATE` after a SELECT that a decision rests on; nothing on SQLite, whose one writer serializes. */
  readonly forUpdate: string;
  /** `FOR NO KEY UPDATE`: the lock of a parent row (an organization) that inserts referencing it need not wait for. */
  readonly forNoKeyUpdate: string;
  /** `FOR SHARE`: a row that must not change or go until the commit, while others may read it so too (nothing on SQLite). */
  readonly forShare: string;
  /**
   * `FOR UPDATE SKIP LOCKED`: a claim of due rows (a sweep, a delivery round) that leaves the rows
   * another coordinator's claim holds to it instead of waiting; nothing on SQLite.
   */
  readonly forUpdateSkipLocked: string;
  /**
   * A table-valued function giving the elements of a JSON array parameter (text) as rows of one
   * column `value`: `id IN (SELECT value FROM ${d.jsonArrayElements}(?))`, with `JSON.stringify(ids)`.
   */
  readonly jsonArrayElements: string;
  /**
   * `IN` the elements of a JSON array parameter (text): `WHERE id ${d.inJsonArray('?')}`, with
   * `JSON.stringify(ids)`. On PostgreSQL it is `= ANY(ARRAY(SELECT ...))`: the array is built once
   * and the column's index is used, where `IN (SELECT value FROM json_array_elements_text(?))` was
   * planned as a hash join over a scan of the whole table (the function is estimated at 100 rows).
   */
  inJsonArray(parameter: string): string;
  /**
   * Rows passed as one JSON parameter, as a table `alias` with the `columns` named (name: PostgreSQL
   * type), for a write of many rows in one statement:
   * `FROM ${d.jsonRecords('?', 't', COLUMNS)}` with `jsonRecords(COLUMNS, objects)` (rows.ts). The
   * parameter is an array of rows, each an array of its values in the order of `columns` (SQLite
   * reads an element by its position twice as fast as by a key). SQLite reads each value with
   * `->>`, as its JSON type gives it (`true` is 1, an object its text); PostgreSQL casts its text
   * to the type named.
   */
  jsonRecords(parameter: string, alias: string, columns: Readonly<Record<string, string>>): string;
  /**
   * A parameter compared with the leading column of an index that a MAX or an `ORDER BY ... LIMIT 1`
   * seeks, or that a hot query's planner weighs against other plans (a join, an `ORDER BY` the
   * index also serves): `+?` on SQLite, where 3.54 seeks ~4 µs slower with a bare parameter, or
   * prepares such a query again at every run, and the no-op `+` keeps the old cost
   * (docs/performance.md, "Measured facts"); `?` on PostgreSQL.
   */
  readonly seekParameter: string;
  /**
   * A query of one row: the database's size on disk (`bytes`) and, on SQLite, the free pages
   * inside its file (`free_bytes`, NULL on PostgreSQL, whose free space autovacuum manages).
   */
  readonly databaseSize: string;
  /**
   * The UTC hour an instant column falls in, as text `YYYY-MM-DDTHH` alike on both (the start of
   * an ISO 8601 instant): SQLite's column is that text already, PostgreSQL's a `timestamptz`.
   */
  hourOf(column: string): string;
}

/** `jsonRecords` over `elements` (a function giving a JSON array's elements as rows of a column `value`). */
function jsonRows(elements: string, read: (index: number, type: string) => string): Dialect['jsonRecords'] {
  return (parameter, alias, columns) =>
    `(SELECT ${Object.entries(columns)
      .map(([name, type], i) => `${read(i, type)} AS ${name}`)
      .join(', ')} FROM ${elements}(${parameter})) AS ${alias}`;
}

export const SQLITE: Dialect = {
  name: 'sqlite',
  insertionOrder: 'rowid',
  byteOrder: '',
  forUpdate: '',
  forNoKeyUpdate: '',
  forShare: '',
  forUpdateSkipLocked: '',
  jsonArrayElements: 'json_each',
  inJsonArray: (parameter) => `IN (SELECT value FROM json_each(${parameter}))`,
  jsonRecords: jsonRows('json_each', (i) => `value ->> ${i}`),
  seekParameter: '+?',
  databaseSize: `SELECT c.page_count * s.page_size AS bytes, f.freelist_count * s.page_size AS free_bytes
    FROM pragma_page_count() c, pragma_page_size() s, pragma_freelist_count() f`,
  hourOf: (column) => `substr(${column}, 1, 13)`,
};

export const POSTGRES: Dialect = {
  name: 'postgres',
  insertionOrder: 'seq',
  byteOrder: ' COLLATE "C"',
  forUpdate: 'FOR UPDATE',
  forNoKeyUpdate: 'FOR NO KEY UPDATE',
  forShare: 'FOR SHARE',
  forUpdateSkipLocked: 'FOR UPDATE SKIP LOCKED',
  jsonArrayElements: 'json_array_elements_text',
  inJsonArray: (parameter) => `= ANY(ARRAY(SELECT value FROM json_array_elements_text(${parameter})))`,
  jsonRecords: jsonRows('json_array_elements', (i, type) => `CAST(value ->> ${i} AS ${type})`),
  seekParameter: '?',
  databaseSize: 'SELECT pg_database_size(current_database()) AS bytes, NULL AS free_bytes',
  hourOf: (column) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24')`,
};

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
  /** `FOR UPDATE` after a SELECT that a decision rests on; nothing on SQLite, whose one writer serializes. */
  readonly forUpdate: string;
  /** `FOR NO KEY UPDATE`: the lock of a parent row (an organization) that inserts referencing it need not wait for. */
  readonly forNoKeyUpdate: string;
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
   * A parameter compared with the leading column of an index that a MAX or an `ORDER BY ... LIMIT 1`
   * seeks: `+?` on SQLite, where 3.54 seeks ~4 µs slower with a bare parameter and the no-op `+`
   * keeps the old cost (docs/performance.md, "Measured facts"); `?` on PostgreSQL.
   */
  readonly seekParameter: string;
}

export const SQLITE: Dialect = {
  name: 'sqlite',
  insertionOrder: 'rowid',
  forUpdate: '',
  forNoKeyUpdate: '',
  forUpdateSkipLocked: '',
  jsonArrayElements: 'json_each',
  seekParameter: '+?',
};

export const POSTGRES: Dialect = {
  name: 'postgres',
  insertionOrder: 'seq',
  forUpdate: 'FOR UPDATE',
  forNoKeyUpdate: 'FOR NO KEY UPDATE',
  forUpdateSkipLocked: 'FOR UPDATE SKIP LOCKED',
  jsonArrayElements: 'json_array_elements_text',
  seekParameter: '?',
};

import pg from 'pg';
import type { Db } from '../../src/db/database.js';
import { INSERT_JOB, newJobParams } from '../../src/db/repositories/job-rows.js';
import { SQLITE } from '../../src/db/sql/dialect.js';
import { PostgresDatabase, SQLITE_SHAPED_TYPES } from '../../src/db/sql/postgres.js';
import { numberParameters } from '../../src/db/sql/statement.js';
import type { NewJob } from '../../src/domain/model/jobs.js';

/**
 * A coordinator's database as a test reaches past the API into it (to read what no route shows,
 * to write what no route makes), one way on both databases: statements with `?` parameters (on
 * PostgreSQL numbered `$1, $2, ...` before they run) and rows as SQLite gives them: JSON documents
 * as their text (PostgreSQL's `json` keeps it as written), flags as 1 or 0, instants as ISO 8601
 * strings, integers as numbers. Write SQL that both dialects read alike (`TRUE`, `FALSE`,
 * `COALESCE`, `seq` rather than `rowid`).
 */
export interface TestSql {
  readonly kind: 'sqlite' | 'postgres';
  all<T = Record<string, unknown>>(sql: string, ...params: unknown[]): Promise<T[]>;
  /** The first row, or undefined. */
  get<T = Record<string, unknown>>(sql: string, ...params: unknown[]): Promise<T | undefined>;
  run(sql: string, ...params: unknown[]): Promise<void>;
  /** Stores a job with the coordinator's own INSERT of a job, as an admission would. */
  insertJob(job: NewJob): Promise<void>;
  /** Closes what it opened (its PostgreSQL connections; nothing on SQLite). */
  close(): Promise<void>;
}

/** On the coordinator's own SQLite connection. */
export function sqliteTestSql(db: () => Db): TestSql {
  return {
    kind: 'sqlite',
    async all<T>(sql: string, ...params: unknown[]) {
      return db()
        .prepare(sql)
        .all(...params) as T[];
    },
    async get<T>(sql: string, ...params: unknown[]) {
      return db()
        .prepare(sql)
        .get(...params) as T | undefined;
    },
    async run(sql, ...params) {
      db()
        .prepare(sql)
        .run(...params);
    },
    async insertJob(job) {
      db().prepare(INSERT_JOB.compiled(SQLITE).text).run(newJobParams(job));
    },
    async close() {},
  };
}

/** On connections of its own to the PostgreSQL database `url`, opened at the first statement. */
export function postgresTestSql(url: string): TestSql {
  let pool: pg.Pool | undefined;
  const open = () => {
    if (pool) return pool;
    pool = new pg.Pool({ connectionString: url, max: 2, types: SQLITE_SHAPED_TYPES });
    // An idle connection ended by the server (the database dropped under it): the pool drops it.
    pool.on('error', () => undefined);
    return pool;
  };
  const query = async (sql: string, params: unknown[]) => (await open().query(numberParameters(sql).text, params)).rows;
  return {
    kind: 'postgres',
    async all<T>(sql: string, ...params: unknown[]) {
      return (await query(sql, params)) as T[];
    },
    async get<T>(sql: string, ...params: unknown[]) {
      return (await query(sql, params))[0] as T | undefined;
    },
    async run(sql, ...params) {
      await query(sql, params);
    },
    async insertJob(job) {
      await new PostgresDatabase(open()).run(INSERT_JOB, newJobParams(job));
    },
    async close() {
      await pool?.end();
      pool = undefined;
    },
  };
}

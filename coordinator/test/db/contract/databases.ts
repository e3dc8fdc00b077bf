import { afterAll, afterEach, beforeAll, beforeEach } from 'vitest';
import { openDatabase, type Db } from '../../../src/db/database.js';
import { migrate, migratePostgres } from '../../../src/db/migrate.js';
import { createPool, type PgPool } from '../../../src/db/postgres/pool.js';
import { INSERT_JOB, newJobParams } from '../../../src/db/repositories/job-rows.js';
import { PostgresDatabase } from '../../../src/db/sql/postgres.js';
import { SQLITE } from '../../../src/db/sql/dialect.js';
import { GroupCommitExecutor } from '../../../src/db/writer/executor.js';
import type { NewJob } from '../../../src/domain/model/jobs.js';
import type { Repositories } from '../../../src/domain/model/repositories.js';
import { createPostgresRepositories } from '../../../src/postgres-repositories.js';
import { createSqliteRepositories } from '../../../src/sqlite-repositories.js';
import { freshPostgresDatabase, type TestDatabase } from '../../postgres/database.js';

/**
 * The repository contract suite runs every case against both databases (`describe.each(DATABASES)`),
 * so the SQLite and PostgreSQL implementations cannot drift apart.
 */
export const DATABASES = ['sqlite', 'postgres'] as const;
export type DatabaseKind = (typeof DATABASES)[number];

/** The repositories the contract covers: all of them. */
export type ContractRepositories = Repositories;

export interface DatabaseUnderTest {
  readonly kind: DatabaseKind;
  /** Fresh for each test: an empty, migrated database. */
  readonly repos: ContractRepositories;
  /**
   * The same database as another coordinator sees it: on PostgreSQL, repositories on a second
   * pool (several coordinators share one database); on SQLite, where one process holds the
   * database, the same repositories.
   */
  readonly other: ContractRepositories;
  /** A statement without parameters that both dialects read alike, for setups no repository method makes. */
  exec(sql: string): Promise<void>;
  /** The rows of a query without parameters that both dialects read alike, to look at what was stored. */
  rows<T = Record<string, unknown>>(sql: string): Promise<T[]>;
  /** Stores a job as an admission would (no repository method creates a bare job). */
  insertJob(job: NewJob): Promise<void>;
}

/** Gives the tests of a `describe` an empty database of a kind (databasesOfThisFile). */
export interface ContractDatabases {
  use(kind: DatabaseKind): DatabaseUnderTest;
}

/**
 * Call once at the top of a contract test file. Each test of a `describe` that calls `use(kind)`
 * gets an empty, migrated database of `kind`: a new in-memory SQLite database per test; on
 * PostgreSQL, the file's own database (on the run's server, coordinator/test/postgres/, with the
 * collation of an `en_US.UTF-8` server), made and migrated once and emptied before each test.
 */
export function databasesOfThisFile(): ContractDatabases {
  const postgres = postgresOfThisFile();
  return { use: (kind) => (kind === 'sqlite' ? useSqlite() : postgres.use()) };
}

function useSqlite(): DatabaseUnderTest {
  let db: Db;
  let repos: ContractRepositories;
  beforeEach(() => {
    db = openDatabase(':memory:');
    migrate(db);
    repos = createSqliteRepositories(db, new GroupCommitExecutor(db));
  });
  afterEach(() => db.close());
  return {
    kind: 'sqlite',
    get repos() {
      return repos;
    },
    get other() {
      return repos;
    },
    async exec(sql) {
      db.exec(sql);
    },
    async rows<T>(sql: string) {
      return db.prepare(sql).all() as T[];
    },
    async insertJob(job) {
      db.prepare(INSERT_JOB.compiled(SQLITE).text).run(newJobParams(job));
    },
  };
}

/** Tables a test never empties: the migrations' record and the one-row change counters. */
const KEPT = ['schema_migrations', 'change_counter', 'ota_change_counter'];

function postgresOfThisFile(): { use(): DatabaseUnderTest } {
  let database: TestDatabase | undefined;
  let pool: PgPool;
  let otherPool: PgPool;
  let repos: ContractRepositories;
  let other: ContractRepositories;
  let empty = '';
  beforeAll(async () => {
    // Sorting text as many servers do (en_US.UTF-8), not as SQLite: what the repositories give in
    // an order must give it alike on both databases.
    database = await freshPostgresDatabase({ collation: 'en-US', migrated: true });
    pool = createPool(database.url);
    otherPool = createPool(database.url);
    await migratePostgres(pool);
    repos = createPostgresRepositories(pool);
    other = createPostgresRepositories(otherPool);
    const { rows } = await pool.query<{ name: string }>(
      `SELECT table_name AS name FROM information_schema.tables
       WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'`,
    );
    const tables = rows.map((r) => r.name).filter((name) => !KEPT.includes(name));
    // DELETE with triggers and foreign keys off (a superuser's session_replication_role): ~2 ms,
    // where TRUNCATE of every table takes ~150 ms. Identity columns go on counting.
    empty = `BEGIN; SET LOCAL session_replication_role = replica;
      ${tables.map((name) => `DELETE FROM ${name};`).join(' ')}
      UPDATE change_counter SET generation = 0; UPDATE ota_change_counter SET generation = 0; COMMIT;`;
  });
  afterAll(async () => {
    await pool?.end();
    await otherPool?.end();
    await database?.drop();
  });
  return {
    use() {
      beforeEach(async () => {
        await pool.query(empty);
      });
      return {
        kind: 'postgres',
        get repos() {
          return repos;
        },
        get other() {
          return other;
        },
        async exec(sql) {
          await pool.query(sql);
        },
        async rows<T>(sql: string) {
          return (await pool.query(sql)).rows as T[];
        },
        async insertJob(job) {
          await new PostgresDatabase(pool).run(INSERT_JOB, newJobParams(job));
        },
      };
    },
  };
}

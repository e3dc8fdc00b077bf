import crypto from 'node:crypto';
import fs from 'node:fs';
import pg from 'pg';
import { inject } from 'vitest';
import { migratePostgres } from '../../src/db/migrate.js';
import { createPool } from '../../src/db/postgres/pool.js';
import { eventually } from '../../../test/helpers/poll.js';

const READY_TIMEOUT_MS = 60_000;

/** A connection to the server's `postgres` database once the server accepts one. */
async function adminClient(): Promise<pg.Client> {
  const info = inject('postgresServer');
  let refused: unknown;
  const ready = await eventually(
    async () => {
      if (fs.existsSync(info.failedFile)) return { failed: fs.readFileSync(info.failedFile, 'utf8') };
      const client = new pg.Client({ ...info, database: 'postgres' });
      try {
        await client.connect();
        return { client };
      } catch (error) {
        refused = error;
        await client.end().catch(() => undefined);
        return undefined;
      }
    },
    READY_TIMEOUT_MS,
    () => `the tests' PostgreSQL server to answer (${(refused as Error | undefined)?.message ?? 'no attempt'})`,
  );
  if ('failed' in ready) throw new Error(`the tests' PostgreSQL server did not start:\n${ready.failed}`);
  return ready.client;
}

export interface TestDatabase {
  /** `postgres://user:password@127.0.0.1:port/name`, as DROVER_DATABASE_URL would hold it. */
  url: string;
  name: string;
  /** Drops the database (its connections must be closed first). */
  drop(): Promise<void>;
}

export interface DatabaseOptions {
  /**
   * How the database sorts text: `bytes`, the server's own `C.UTF-8` (the order of SQLite's BINARY
   * collation), or `en-US`, the ICU locale of the many servers created with `en_US.UTF-8` (`a`
   * before `B`, `-` and `_` ignored at first): a test of what must not depend on it; or `tr-TR`,
   * ICU's Turkish, whose `lower('I')` is a dotless `ı`.
   */
  collation?: 'bytes' | 'en-US' | 'tr-TR';
  /**
   * Migrated already: a copy of a database this worker migrated once (today's migrations, no
   * rows), so that a coordinator starting on it has nothing to migrate (its start: ~0.25 s
   * instead of ~1 s, most of it the thirty-odd migrations). Otherwise empty.
   */
  migrated?: boolean;
}

/** The migrated database of each collation this worker copies (`migrated`), made at the first call. */
const templates = new Map<string, Promise<string>>();

function migratedTemplate(collation: DatabaseOptions['collation']): Promise<string> {
  const key = collation ?? 'bytes';
  let template = templates.get(key);
  if (!template) {
    template = (async () => {
      const database = await freshPostgresDatabase({ collation });
      const pool = createPool(database.url, { max: 1 });
      try {
        await migratePostgres(pool);
      } finally {
        await pool.end();
      }
      return database.name;
    })();
    // A failed attempt is not kept: the next call tries again.
    template.catch(() => templates.delete(key));
    templates.set(key, template);
  }
  return template;
}

/**
 * A new, empty database on the run's PostgreSQL server (global-setup.ts): call it once per test
 * file (in `beforeAll`), so test files never see each other's rows.
 */
export async function freshPostgresDatabase(options: DatabaseOptions = {}): Promise<TestDatabase> {
  const info = inject('postgresServer');
  const name = `drover_test_${crypto.randomBytes(6).toString('hex')}`;
  // Copied with the server's files (FILE_COPY: its checkpoints cost nothing on the tests' server,
  // which runs without fsync), ~40 ms, where WAL_LOG took ~130.
  const template = options.migrated ? await migratedTemplate(options.collation) : null;
  const admin = await adminClient();
  try {
    await admin.query(
      template
        ? `CREATE DATABASE ${name} TEMPLATE ${template} STRATEGY FILE_COPY`
        : options.collation === undefined || options.collation === 'bytes'
          ? `CREATE DATABASE ${name}`
          : `CREATE DATABASE ${name} TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE '${options.collation}' LOCALE 'C.UTF-8'`,
    );
  } finally {
    await admin.end();
  }
  const url = `postgres://${info.user}:${info.password}@${info.host}:${info.port}/${name}`;
  return {
    url,
    name,
    async drop() {
      const client = await adminClient();
      try {
        await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await client.end();
      }
    },
  };
}

/** Runs one query on the database of `url` on a connection of its own, for a test's checks. */
export async function queryDatabase<R extends object>(url: string, sql: string): Promise<R[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<R>(sql)).rows;
  } finally {
    await client.end();
  }
}

/** A connection of its own to the database of `url`, to hold a transaction (a row lock) across a test's steps. */
export interface TestSession {
  query<R extends object>(sql: string, params?: unknown[]): Promise<R[]>;
  end(): Promise<void>;
}

export async function sessionOf(url: string): Promise<TestSession> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  return {
    async query<R extends object>(sql: string, params: unknown[] = []) {
      return (await client.query<R>(sql, params)).rows;
    },
    end: () => client.end(),
  };
}

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  createCoordinator,
  createLogger,
  loadConfig,
  systemClock,
  type Clock,
  type Coordinator,
} from '@drover/coordinator';
import { databaseFile, openDatabase } from '../../coordinator/src/db/database.js';
import { migrate } from '../../coordinator/src/db/migrate.js';
import { withHashedBootstrap } from '../../coordinator/test/bootstrap-hash.js';
import { postgresTestSql, sqliteTestSql, type TestSql } from '../../coordinator/test/db/test-sql.js';
import { freshPostgresDatabase, type TestDatabase } from '../../coordinator/test/postgres/database.js';
import { ApiClient } from './http.js';

export const OWNER_EMAIL = 'owner@example.test';
export const OWNER_PASSWORD = 'correct horse battery';

export interface TestCoordinatorOptions {
  /** Extra environment (e.g. API_TOKEN_READ_RATE_LIMIT_PER_MINUTE). */
  env?: Record<string, string>;
  /**
   * Reuse a data directory (restart tests): on PostgreSQL, the database of the coordinator that
   * ran on it before.
   */
  dataDir?: string;
  clock?: Clock;
  /** `sqlite`: on SQLite in any pass (the source of a copy to PostgreSQL, say). */
  database?: 'sqlite';
}

export interface TestCoordinator {
  coordinator: Coordinator;
  /** `http://127.0.0.1:<port>` */
  url: string;
  /** `${url}/v1` */
  baseUrl: string;
  dataDir: string;
  /** The bootstrapped organization. */
  orgId: string;
  /** An unauthenticated client. */
  api: ApiClient;
  /** A client signed in as the bootstrapped owner. */
  owner: ApiClient;
  /** Its database, for what the API does not show or make, alike on both databases. */
  sql: TestSql;
  /**
   * Takes its database away under it, as a failed disk or server would: closes the SQLite
   * connection, or drops the PostgreSQL database, closing the coordinator's connections to it.
   */
  loseDatabase(): Promise<void>;
  close(): Promise<void>;
}

export function makeTempDir(prefix = 'drover-test-'): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

/**
 * The run's database for the test coordinators: SQLite in their data directory, or, with
 * `DROVER_TEST_DATABASE=postgres` (CI's PostgreSQL pass, vitest.postgres.config.ts), a PostgreSQL
 * database on the run's server for each data directory, made for the first coordinator on it,
 * unless the coordinator names a database itself or is asked to run on SQLite.
 */
const onPostgres = process.env.DROVER_TEST_DATABASE === 'postgres';
/** The PostgreSQL database of each data directory a test coordinator ran on (this file's). */
const databases = new Map<string, TestDatabase>();

/**
 * A real coordinator on a loopback port (port 0: never a fixed one) with its SQLite file in a
 * temp directory (or its PostgreSQL database: above), bootstrapped with an owner. Register
 * `close` before asserting anything.
 */
export async function startTestCoordinator(options: TestCoordinatorOptions = {}): Promise<TestCoordinator> {
  const dataDir = options.dataDir ?? makeTempDir();
  const database =
    !options.env?.DROVER_DATABASE_URL && options.database !== 'sqlite' ? await databaseOf(dataDir) : null;
  if (!database && !options.env?.DROVER_DATABASE_URL) startFromTemplate(dataDir);
  const config = await withHashedBootstrap(
    loadConfig(
      {
        DROVER_BOOTSTRAP_EMAIL: OWNER_EMAIL,
        DROVER_BOOTSTRAP_PASSWORD: OWNER_PASSWORD,
        DROVER_BOOTSTRAP_ORG: 'acme',
        ...(database ? { DROVER_DATABASE_URL: database.url } : {}),
        ...options.env,
      },
      { port: '0', host: '127.0.0.1', dataDir, logLevel: process.env.DROVER_TEST_LOG ?? 'silent' },
    ),
  );
  let coordinator: Coordinator;
  try {
    coordinator = await createCoordinator(config, createLogger(config.logLevel), options.clock ?? systemClock);
  } catch (error) {
    if (!options.dataDir) await forget(dataDir);
    throw error;
  }
  const sql =
    config.database.kind === 'postgres' ? postgresTestSql(config.database.url) : sqliteTestSql(() => coordinator.db);
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    try {
      await sql.close();
      await coordinator.close();
    } finally {
      // A data directory the test gave may see another coordinator (a restart): its database stays
      // until the run's server goes.
      if (!options.dataDir) await forget(dataDir);
    }
  };
  const loseDatabase = async () => {
    await sql.close();
    if (database) await database.drop();
    else coordinator.db.close();
  };
  try {
    const url = await coordinator.app.listen({ port: 0, host: '127.0.0.1' });
    const api = new ApiClient(`${url}/v1`);
    // A session as a sign-in issues it, without checking the password again: the bootstrap hashed
    // it already, and each scrypt hash costs 50–200 ms of CPU (login.test.ts signs in for real).
    const owner = await sessionOf(coordinator, api, OWNER_EMAIL);
    const orgs = await owner.get<{ id: string; name: string }[]>('/orgs');
    const orgId = orgs.body.find((o) => o.name === 'acme')?.id ?? orgs.body[0]?.id;
    if (!orgId) throw new Error('bootstrapped organization not found');
    return { coordinator, url, baseUrl: `${url}/v1`, dataDir, orgId, api, owner, sql, loseDatabase, close };
  } catch (error) {
    await close();
    throw error;
  }
}

/** A session of the user `email` issued by the coordinator itself, as a sign-in would issue it. */
async function sessionOf(coordinator: Coordinator, api: ApiClient, email: string): Promise<ApiClient> {
  const user = await coordinator.ctx.repos.users.findByEmail(email);
  if (!user) throw new Error(`no user ${email}`);
  return api.withToken((await coordinator.ctx.sessions.issue(user.id, user.sessionGeneration)).token);
}

/** This process's migrated, empty SQLite database, made at the first call (below). */
let sqliteTemplate: string | undefined;

/**
 * Puts a copy of a migrated, empty SQLite database in a new data directory, as the PostgreSQL
 * pass makes each database from a migrated template: migrating a new file took 47 of the 80 ms
 * of a test coordinator's start, on hundreds of starts a run. The coordinator still runs its
 * migrations on the copy (none is left to apply); the migrations themselves, from an empty file,
 * are proven by coordinator/test/db/migrate.test.ts and the command's own tests (cli.test.ts).
 */
function startFromTemplate(dataDir: string): void {
  const file = databaseFile(dataDir);
  if (fs.existsSync(file)) return;
  if (!sqliteTemplate) {
    const template = path.join(makeTempDir('drover-template-'), 'drover.sqlite');
    const db = openDatabase(template);
    try {
      migrate(db);
    } finally {
      // The last connection's close checkpoints the WAL into the file and removes it.
      db.close();
    }
    sqliteTemplate = template;
  }
  fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  fs.copyFileSync(sqliteTemplate, file);
  fs.chmodSync(file, 0o600);
}

/** The PostgreSQL database of a data directory in the PostgreSQL pass (made at the first call); null on SQLite. */
async function databaseOf(dataDir: string): Promise<TestDatabase | null> {
  if (!onPostgres) return null;
  const database = databases.get(dataDir) ?? (await freshPostgresDatabase({ migrated: true }));
  databases.set(dataDir, database);
  return database;
}

/**
 * The environment that puts a `drover-coordinator` child process on `dataDir` on the pass's
 * database: its PostgreSQL database in the PostgreSQL pass (the one a test coordinator started on
 * that data directory uses too), nothing on SQLite.
 */
export async function databaseEnv(dataDir: string): Promise<Record<string, string>> {
  const database = await databaseOf(dataDir);
  return database ? { DROVER_DATABASE_URL: database.url } : {};
}

/** Drops the PostgreSQL database of a data directory, if it has one. */
async function forget(dataDir: string): Promise<void> {
  const database = databases.get(dataDir);
  databases.delete(dataDir);
  await database?.drop();
}

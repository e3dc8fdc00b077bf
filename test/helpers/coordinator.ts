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
import { freshPostgresDatabase } from '../../coordinator/test/postgres/database.js';
import { ApiClient } from './http.js';

export const OWNER_EMAIL = 'owner@example.test';
export const OWNER_PASSWORD = 'correct horse battery';

export interface TestCoordinatorOptions {
  /** Extra environment (e.g. API_TOKEN_READ_RATE_LIMIT_PER_MINUTE). */
  env?: Record<string, string>;
  /** Reuse a data directory (restart tests). */
  dataDir?: string;
  clock?: Clock;
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
  close(): Promise<void>;
}

export function makeTempDir(prefix = 'drover-test-'): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

/**
 * The run's database for the test coordinators: SQLite in their data directory, or, with
 * `DROVER_TEST_DATABASE=postgres` (CI's PostgreSQL pass, scripts/test.sh), a fresh database on the
 * run's PostgreSQL server for each coordinator that names none itself.
 */
const onPostgres = process.env.DROVER_TEST_DATABASE === 'postgres';

/**
 * A real coordinator on a loopback port (port 0: never a fixed one) with its SQLite file in a
 * temp directory (or its own PostgreSQL database: above), bootstrapped with an owner. Register
 * `close` before asserting anything.
 */
export async function startTestCoordinator(options: TestCoordinatorOptions = {}): Promise<TestCoordinator> {
  const dataDir = options.dataDir ?? makeTempDir();
  const database =
    onPostgres && !options.env?.DROVER_DATABASE_URL && !options.dataDir ? await freshPostgresDatabase() : null;
  const config = loadConfig(
    {
      DROVER_BOOTSTRAP_EMAIL: OWNER_EMAIL,
      DROVER_BOOTSTRAP_PASSWORD: OWNER_PASSWORD,
      DROVER_BOOTSTRAP_ORG: 'acme',
      ...(database ? { DROVER_DATABASE_URL: database.url } : {}),
      ...options.env,
    },
    { port: '0', host: '127.0.0.1', dataDir, logLevel: process.env.DROVER_TEST_LOG ?? 'silent' },
  );
  const coordinator = await createCoordinator(config, createLogger(config.logLevel), options.clock ?? systemClock);
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    await coordinator.close();
    await database?.drop();
  };
  try {
    const url = await coordinator.app.listen({ port: 0, host: '127.0.0.1' });
    const api = new ApiClient(`${url}/v1`);
    const owner = await api.login(OWNER_EMAIL, OWNER_PASSWORD);
    const orgs = await owner.get<{ id: string; name: string }[]>('/orgs');
    const orgId = orgs.body.find((o) => o.name === 'acme')?.id ?? orgs.body[0]?.id;
    if (!orgId) throw new Error('bootstrapped organization not found');
    return { coordinator, url, baseUrl: `${url}/v1`, dataDir, orgId, api, owner, close };
  } catch (error) {
    await close();
    throw error;
  }
}

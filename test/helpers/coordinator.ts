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
 * A real coordinator on a loopback port (port 0: never a fixed one) with its SQLite file in a
 * temp directory, bootstrapped with an owner. Register `close` before asserting anything.
 */
export async function startTestCoordinator(options: TestCoordinatorOptions = {}): Promise<TestCoordinator> {
  const dataDir = options.dataDir ?? makeTempDir();
  const config = loadConfig(
    {
      DROVER_BOOTSTRAP_EMAIL: OWNER_EMAIL,
      DROVER_BOOTSTRAP_PASSWORD: OWNER_PASSWORD,
      DROVER_BOOTSTRAP_ORG: 'acme',
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

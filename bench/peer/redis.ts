import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

/**
 * A Redis server of its own for the peer (bench/peer/README.md): Debian's `redis-server` on a free
 * loopback port with its own data directory, removed on close. `aof`: the durable configuration
 * (`appendonly yes`, `appendfsync everysec`); otherwise Redis' defaults (RDB snapshots now and
 * then: a job acknowledged since the last one is lost with the process).
 */
export interface BenchRedis {
  port: number;
  pid: number;
  /** CPU seconds the server has used so far (user + system), from /proc. */
  cpuSeconds(): number;
  close(): Promise<void>;
}

export const REDIS_SERVER = '/usr/bin/redis-server';

export async function startRedis({ aof = false }: { aof?: boolean } = {}): Promise<BenchRedis> {
  if (!fs.existsSync(REDIS_SERVER)) {
    throw new Error(`${REDIS_SERVER} is missing: apt-get install -y redis-server (the peer needs it)`);
  }
  const port = await freePort();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'drover-peer-redis-'));
  const args = [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--dir',
    dir,
    '--daemonize',
    'no',
    '--loglevel',
    'warning',
  ];
  if (aof) args.push('--appendonly', 'yes', '--appendfsync', 'everysec');
  const child = spawn(REDIS_SERVER, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  await waitForPort(port, child, () => output);
  const pid = child.pid!;
  return {
    port,
    pid,
    cpuSeconds: () => processCpuSeconds(pid),
    async close() {
      await stop(child);
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** user + system CPU seconds of a process (fields 14 and 15 of /proc/<pid>/stat, in clock ticks). */
export function processCpuSeconds(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

async function waitForPort(port: number, child: ChildProcess, output: () => string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`redis-server exited with ${child.exitCode}: ${output()}`);
    const open = await new Promise<boolean>((resolve) => {
      const socket = net.connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (open) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`redis-server did not listen on ${port} within 10 s: ${output()}`);
}

function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

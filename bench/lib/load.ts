import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';

/**
 * Load generation with autocannon, always in a child process: the server under test keeps this
 * process's event loop to itself, and the load generator gets its own (on a 2-vCPU machine the
 * two then share the cores the way a real client and server would).
 */

export interface LoadOptions {
  url: string;
  headers?: Record<string, string>;
  /** HTTP method (autocannon -m); default GET. */
  method?: 'GET' | 'POST';
  /** Request body sent with every request (autocannon -b); set its content-type in `headers`. */
  body?: string;
  /** Concurrent connections (autocannon -c). */
  connections: number;
  /** Seconds (autocannon -d). */
  duration: number;
  /** Requests per second over all connections (autocannon -R); unset: as fast as answered. */
  rate?: number;
}

export interface LoadResult {
  /** Mean requests per second over the run. */
  requestsPerSecond: number;
  /** Latency percentiles in milliseconds. */
  p50: number;
  p99: number;
  total: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  /**
   * CPU time this process spent per request during the run (user + system, microseconds). The
   * servers under test run in this process and autocannon in a child, so this is the server's
   * cost per request: steadier than req/s on a noisy machine.
   */
  serverCpuMicrosPerRequest: number;
}

const require = createRequire(import.meta.url);
const AUTOCANNON = path.join(path.dirname(require.resolve('autocannon/package.json')), 'autocannon.js');

interface AutocannonJson {
  requests: { average: number; total: number };
  latency: { p50: number; p99: number };
  non2xx: number;
  errors: number;
  timeouts: number;
}

export function runLoad(options: LoadOptions): Promise<LoadResult> {
  const args = [AUTOCANNON, '--json', '-c', String(options.connections), '-d', String(options.duration)];
  if (options.method) args.push('-m', options.method);
  if (options.rate !== undefined) args.push('-R', String(options.rate));
  if (options.body !== undefined) args.push('-b', options.body);
  for (const [name, value] of Object.entries(options.headers ?? {})) args.push('-H', `${name}=${value}`);
  args.push(options.url);
  const cpuBefore = process.cpuUsage();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => {
      const line = stdout.trim().split('\n').pop();
      if (code !== 0 || !line) {
        reject(new Error(`autocannon exited with ${code}: ${stderr.trim() || stdout.trim()}`));
        return;
      }
      const cpu = process.cpuUsage(cpuBefore);
      const r = JSON.parse(line) as AutocannonJson;
      resolve({
        serverCpuMicrosPerRequest: (cpu.user + cpu.system) / Math.max(1, r.requests.total),
        requestsPerSecond: r.requests.average,
        p50: r.latency.p50,
        p99: r.latency.p99,
        total: r.requests.total,
        non2xx: r.non2xx,
        errors: r.errors,
        timeouts: r.timeouts,
      });
    });
  });
}

/** Runs the load and fails when any response was not 2xx or any request errored. */
export async function runCleanLoad(options: LoadOptions): Promise<LoadResult> {
  const result = await runLoad(options);
  if (result.non2xx > 0 || result.errors > 0 || result.timeouts > 0) {
    throw new Error(
      `${options.url}: ${result.non2xx} non-2xx responses, ${result.errors} errors, ${result.timeouts} timeouts in ${result.total} requests`,
    );
  }
  return result;
}

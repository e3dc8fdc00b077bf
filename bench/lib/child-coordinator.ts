import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { shebangNodeFlags } from '../../scripts/lib/node-flags.js';

/**
 * The real `drover-coordinator start` in a CHILD process, so that its memory and CPU time are its
 * own (read from /proc): the built `coordinator/dist/cli/main.js`, or with `source` the
 * TypeScript sources through tsx (which costs memory of its own).
 */

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const CHILD_OWNER = { email: 'bench@example.test', password: 'bench password' };

export interface ChildCoordinator {
  child: ChildProcess;
  pid: number;
  /** `http://127.0.0.1:<port>` */
  url: string;
  dataDir: string;
  /** SIGTERM and wait; the data directory stays (for a second look at the same data). */
  stop(): Promise<void>;
  /** SIGKILL (a crash) and wait; the data directory stays. */
  kill(): Promise<void>;
  /** SIGTERM, wait, remove the data directory. */
  close(): Promise<void>;
}

export async function startChildCoordinator(
  options: {
    source?: boolean;
    env?: Record<string, string>;
    nodeFlags?: string[];
    /** An existing data directory (seeded beforehand); default: a new temp directory. */
    dataDir?: string;
    /** The port to listen on (a restart on the port of the one before); default: any free one. */
    port?: number;
  } = {},
): Promise<ChildCoordinator> {
  const file = path.join(ROOT, options.source ? 'coordinator/src/cli/main.ts' : 'coordinator/dist/cli/main.js');
  if (!fs.existsSync(file)) throw new Error('coordinator/dist is missing: run `pnpm build` first');
  // The flags of the coordinator's shebang, as when it is run as a program (docs/operations.md).
  const main = [
    ...shebangNodeFlags(file),
    ...(options.source ? ['--conditions=drover-source', '--import', 'tsx'] : []),
    file,
  ];
  const dataDir = options.dataDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'drover-bench-child-'));
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('DROVER_')));
  const child = spawn(
    process.execPath,
    [...(options.nodeFlags ?? []), ...main, 'start', '--port', String(options.port ?? 0), '--data-dir', dataDir],
    {
      cwd: ROOT,
      env: {
        ...env,
        DROVER_BOOTSTRAP_EMAIL: CHILD_OWNER.email,
        DROVER_BOOTSTRAP_PASSWORD: CHILD_OWNER.password,
        DROVER_LOG_LEVEL: 'warn',
        ...options.env,
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  const exited = new Promise((resolve) => child.on('exit', resolve));
  const remove = () => fs.rmSync(dataDir, { recursive: true, force: true });
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
      await exited;
      clearTimeout(timer);
    }
  };
  try {
    const url = await new Promise<string>((resolve, reject) => {
      let out = '';
      child.stdout!.setEncoding('utf8').on('data', (c: string) => {
        out += c;
        const match = /listening on (http:\/\/\S+) /.exec(out);
        if (match) resolve(match[1]!);
      });
      void exited.then(() => reject(new Error(`the coordinator exited before listening:\n${out}`)));
    });
    return {
      child,
      pid: child.pid!,
      url,
      dataDir,
      stop,
      async kill() {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
        await exited;
      },
      async close() {
        await stop();
        remove();
      },
    };
  } catch (error) {
    child.kill('SIGKILL');
    remove();
    throw error;
  }
}

/**
 * VmRSS (now), VmHWM (the peak over the process's life), or RssAnon / RssFile (the anonymous and
 * file-backed parts of VmRSS) of a process, in MB (MiB: /proc counts kB of 1,024 bytes).
 */
export function memoryMb(pid: number, field: 'VmRSS' | 'VmHWM' | 'RssAnon' | 'RssFile' = 'VmRSS'): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1]);
  return kb / 1024;
}

/** User + system CPU time a process has used so far, in ms (/proc/<pid>/stat, clock ticks of 10 ms). */
export function cpuTimeMs(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // After the command: state is field 3, so utime (14) and stime (15) are at 11 and 12 here.
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { COORDINATOR_MAIN } from './built-commands.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** The real `drover-coordinator` command running as a child process. */
export interface CoordinatorCli {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Resolves with the exit code (null when killed by a signal). */
  exited: Promise<number | null>;
  /** Resolves once stdout matches `pattern`; rejects when the process exits first or after `ms`. */
  waitFor(pattern: RegExp, ms?: number): Promise<RegExpMatchArray>;
}

const children: ChildProcess[] = [];

/**
 * Runs `drover-coordinator <args>` (as built from the sources: built-commands.ts) with only the
 * DROVER_* settings given here. Call `killLeftoverCoordinators()` in an `afterEach`.
 */
export function coordinatorCli(
  args: string[],
  env: Record<string, string> = {},
  /** Close the reading end of its stdout at once, as `drover-coordinator start | head -1` would. */
  options: { closeStdout?: boolean } = {},
): CoordinatorCli {
  const clean = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !k.startsWith('DROVER_') && !k.startsWith('API_TOKEN_')),
  );
  const child = spawn(process.execPath, [COORDINATOR_MAIN, ...args], {
    cwd: ROOT,
    env: { ...clean, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  if (options.closeStdout) child.stdout!.destroy();
  let out = '';
  let err = '';
  const waiters = new Set<() => void>();
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
    out += chunk;
    for (const w of waiters) w();
  });
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
    err += chunk;
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  // 'exit' can fire before the pipes are drained; 'close' comes after both.
  const closed = new Promise<void>((resolve) => child.on('close', () => resolve()));
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    exited: exited.then(async (code) => {
      await closed;
      return code;
    }),
    waitFor(pattern, ms = 20_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const match = out.match(pattern);
          if (match) {
            done();
            resolve(match);
          }
        };
        const timer = setTimeout(() => {
          done();
          reject(new Error(`timed out waiting for ${pattern}; stdout:\n${out}\nstderr:\n${err}`));
        }, ms);
        const done = () => {
          clearTimeout(timer);
          waiters.delete(check);
        };
        void exited.then((code) => {
          if (!out.match(pattern)) {
            done();
            reject(new Error(`exited ${code} before ${pattern}; stdout:\n${out}\nstderr:\n${err}`));
          }
        });
        waiters.add(check);
        check();
      });
    },
  };
}

/** SIGKILLs the coordinators started so far that still run, and answers their pids (a test expects none). */
export function killLeftoverCoordinators(): (number | undefined)[] {
  const alive = children.filter((c) => c.exitCode === null && c.signalCode === null);
  children.length = 0;
  for (const child of alive) child.kill('SIGKILL');
  return alive.map((c) => c.pid);
}

import { execFile, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { PassThrough, Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { runCli } from '../../cli/src/program.js';
import { makeTempDir, OWNER_EMAIL, OWNER_PASSWORD } from './coordinator.js';

const REPO = fileURLToPath(new URL('../..', import.meta.url));

/** The built single executable of the client command line. */
export const DROVER = path.join(REPO, 'cli/dist/drover');

/**
 * Builds `cli/dist/drover` unless it was built from the same inputs (`--if-stale` compares the
 * content of every bundled file: a second test file, or a second run, finds it up to date;
 * concurrent builds wait for one another). Call it in `beforeAll` with a long timeout.
 */
export async function buildDrover(): Promise<void> {
  const build = await new Promise<{ code: number; output: string }>((resolve) => {
    execFile(
      process.execPath,
      [path.join(REPO, 'cli/scripts/build-binary.mjs'), '--if-stale'],
      { cwd: REPO, timeout: 240_000 },
      (error, stdout, stderr) => resolve({ code: error ? 1 : 0, output: `${stdout}${stderr}` }),
    );
  });
  if (build.code !== 0) throw new Error(`building cli/dist/drover failed:\n${build.output}`);
}

export interface DroverRun {
  code: number;
  stdout: string;
  stderr: string;
}

export interface DroverOptions {
  /** The environment beyond a bare PATH and HOME (the binary needs nothing of the repository). */
  env?: Record<string, string>;
  cwd?: string;
  /** Written to standard input, which is then closed. */
  input?: string;
  timeoutMs?: number;
}

function environment(options: DroverOptions): Record<string, string> {
  return { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp', ...options.env };
}

/** Runs the built `drover` with `args`; resolves with its exit code and output. */
export function drover(args: string[], options: DroverOptions = {}): Promise<DroverRun> {
  return new Promise((resolve) => {
    const child = execFile(
      DROVER,
      args,
      { cwd: options.cwd, env: environment(options), timeout: options.timeoutMs ?? 60_000, maxBuffer: 64 << 20 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
    child.stdin?.end(options.input ?? '');
  });
}

export interface DroverProcess {
  child: ChildProcess;
  /** Resolves with the exit code and output when the process ends. */
  exited: Promise<DroverRun & { signal: NodeJS.Signals | null }>;
  output(): { stdout: string; stderr: string };
}

/** Starts the built `drover` without waiting for it (a test that interrupts it). */
export function spawnDrover(args: string[], options: DroverOptions = {}): DroverProcess {
  const child = spawn(DROVER, args, { cwd: options.cwd, env: environment(options), stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  child.stdin!.end(options.input ?? '');
  const exited = new Promise<DroverRun & { signal: NodeJS.Signals | null }>((resolve) => {
    child.once('close', (code, signal) => resolve({ code: code ?? -1, signal, stdout, stderr }));
  });
  return { child, exited, output: () => ({ stdout, stderr }) };
}

/** Kills a `drover` process that may still run (test cleanup). */
export async function stopDrover(run: DroverProcess | undefined): Promise<void> {
  if (!run || run.child.exitCode !== null || run.child.signalCode !== null) return;
  run.child.kill('SIGKILL');
  await run.exited;
}

/**
 * Runs `drover` with `args` in this process (`runCli`, the program the single executable runs),
 * with the same environment, working directory and standard input as `drover()` would give the
 * executable; resolves with its exit code and output. The commands' own tests use it: starting
 * the executable costs ~0.3-0.8 s a call on this machine, and what it adds (its startup, signals)
 * is proven by the tests that spawn it.
 */
export async function droverInProcess(args: string[], options: DroverOptions = {}): Promise<DroverRun> {
  const env = environment(options);
  let stdout = '';
  let stderr = '';
  const stdin = new PassThrough();
  stdin.end(options.input ?? '');
  const code = await runCli(args, {
    out: (text) => void (stdout += text),
    err: (text) => void (stderr += text),
    outBytes: new Writable({
      write(chunk: Buffer, _encoding, done) {
        stdout += chunk.toString();
        done();
      },
    }),
    env,
    cwd: options.cwd ?? process.cwd(),
    homedir: env.HOME!,
    stdin,
    stderrIsTTY: false,
    stdoutIsTTY: false,
    signal: AbortSignal.timeout(options.timeoutMs ?? 60_000),
  });
  return { code, stdout, stderr };
}

/** The bootstrapped owner's `drover`, signed in to a test coordinator from a directory of its own. */
export interface SignedInDrover {
  /** Its working directory; `config/` below it holds the session (`XDG_CONFIG_HOME`). */
  work: string;
  /** The environment of its calls: the coordinator's URL and the config directory. */
  env: Record<string, string>;
  /** Runs `drover` with `args`, the environment with `extra` on top. */
  run(args: string[], extra?: Record<string, string>): Promise<DroverRun>;
  /** Removes its directory. */
  remove(): void;
}

/**
 * Signs the bootstrapped owner in to the coordinator at `url` (`drover login --password-stdin`)
 * from a new directory named after `prefix`, with `runner`: in this process (droverInProcess, the
 * default), or the built executable (`drover`).
 */
export async function signInDrover(
  url: string,
  prefix: string,
  runner: (args: string[], options?: DroverOptions) => Promise<DroverRun> = droverInProcess,
): Promise<SignedInDrover> {
  const work = makeTempDir(prefix);
  const env = { DROVER_URL: url, XDG_CONFIG_HOME: path.join(work, 'config') };
  const login = await runner(['login', '--email', OWNER_EMAIL, '--password-stdin'], {
    env,
    cwd: work,
    input: `${OWNER_PASSWORD}\n`,
  });
  if (login.code !== 0) throw new Error(`drover login: ${login.stderr}`);
  return {
    work,
    env,
    run: (args, extra = {}) => runner(args, { env: { ...env, ...extra }, cwd: work }),
    remove: () => fs.rmSync(work, { recursive: true, force: true }),
  };
}

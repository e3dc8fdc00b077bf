import { execFile } from 'node:child_process';
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { AGENT_MAIN } from './built-commands.js';

const REPO = fileURLToPath(new URL('../..', import.meta.url));

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the real `drover-agent` CLI as a child process, from the repository root (bounded at 30 s). */
export function runAgentCli(args: string[], env: Record<string, string> = {}): Promise<CliRun> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [AGENT_MAIN, ...args],
      { cwd: REPO, env: { ...process.env, ...env }, timeout: 30_000 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

const FAKETIME_LIBRARIES = [
  '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1',
  '/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1',
  '/usr/lib/faketime/libfaketime.so.1',
];

/** libfaketime (Debian's `libfaketime`, installed by scripts/setup.sh), when present. */
export const FAKETIME_LIBRARY = FAKETIME_LIBRARIES.find((file) => fs.existsSync(file));

/**
 * The environment that runs a process with its wall clock moved by `offset` (libfaketime's
 * syntax: `-1d`, `+6m`); its monotonic clock, which timers use, is left alone.
 */
export function skewedClockEnv(offset: string): Record<string, string> {
  if (!FAKETIME_LIBRARY) throw new Error('libfaketime is not installed (scripts/setup.sh installs it)');
  return { LD_PRELOAD: FAKETIME_LIBRARY, FAKETIME: offset, FAKETIME_DONT_FAKE_MONOTONIC: '1' };
}

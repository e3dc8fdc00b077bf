import { PassThrough } from 'node:stream';
import type { Runtime } from '../src/runtime.js';

export interface TestRuntime extends Runtime {
  stdout(): string;
  stderr(): string;
}

/** A runtime that keeps what the command writes; `stdin` is a stream the test writes to. */
export function testRuntime(overrides: Partial<Runtime> = {}): TestRuntime {
  let out = '';
  let err = '';
  return {
    out: (text) => void (out += text),
    err: (text) => void (err += text),
    env: {},
    cwd: process.cwd(),
    homedir: '/nonexistent-home',
    stdin: new PassThrough(),
    stderrIsTTY: false,
    stdoutIsTTY: false,
    signal: new AbortController().signal,
    ...overrides,
    stdout: () => out,
    stderr: () => err,
  };
}

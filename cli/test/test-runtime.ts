import { PassThrough, Writable } from 'node:stream';
import type { Runtime } from '../src/runtime.js';

export interface TestRuntime extends Runtime {
  stdout(): string;
  stderr(): string;
  /** What was written to `outBytes`. */
  stdoutBytes(): Buffer;
}

/** A runtime that keeps what the command writes; `stdin` is a stream the test writes to. */
export function testRuntime(overrides: Partial<Runtime> = {}): TestRuntime {
  let out = '';
  let err = '';
  const bytes: Buffer[] = [];
  return {
    out: (text) => void (out += text),
    err: (text) => void (err += text),
    outBytes: new Writable({
      write(chunk: Buffer, _encoding, done) {
        bytes.push(chunk);
        done();
      },
    }),
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
    stdoutBytes: () => Buffer.concat(bytes),
  };
}

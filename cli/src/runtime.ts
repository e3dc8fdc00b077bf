import type { EventEmitter } from 'node:events';
import os from 'node:os';
import type { Readable, Writable } from 'node:stream';
import { EXIT } from './exit-codes.js';

/**
 * What a command touches outside itself: its output streams, environment, standard input and
 * working directory, and the signal of an interruption. `processRuntime` is the real one; tests
 * of the program in process pass their own.
 */
export interface Runtime {
  /**
   * Writes to stdout. Once the command line runs (`runCli`), every control character in the text
   * but tab and line break is shown as `\xHH`, never obeyed (output/terminal.ts): job logs, error
   * messages and names come from elsewhere.
   */
  out(text: string): void;
  /** Writes to stderr, control characters shown as `out` shows them. */
  err(text: string): void;
  /**
   * Standard output as bytes, written as they are (`files download -o -`): a stream, for the
   * writer to wait while it is full. Never ended nor destroyed by a command.
   */
  outBytes: Writable;
  /**
   * The command line's own terminal sequences (a progress bar redrawn in place, the table of
   * `jobs --watch`), written as they are. Set by output/terminal.ts; absent, `out` and `err` are raw.
   */
  raw?: { out(text: string): void; err(text: string): void };
  env: Readonly<Record<string, string | undefined>>;
  cwd: string;
  homedir: string;
  /** Standard input (a password from `--password-stdin`, or the terminal that asks for one). */
  stdin: Readable & { isTTY?: boolean; setRawMode?(mode: boolean): unknown };
  /** Whether stderr is a terminal: progress bars and redrawn tables only there. */
  stderrIsTTY: boolean;
  stdoutIsTTY: boolean;
  /** Aborts when the process is asked to stop (SIGINT, SIGTERM). */
  signal: AbortSignal;
}

/** The process's runtime; the first SIGINT or SIGTERM aborts `signal`, a second one ends the process. */
export function processRuntime(): Runtime {
  const interrupt = new AbortController();
  const onSignal = (name: NodeJS.Signals) => {
    if (interrupt.signal.aborted) process.exit(128 + (os.constants.signals[name] ?? 2));
    interrupt.abort(name);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  const brokenPipe = () => process.exit(EXIT.brokenPipe);
  stopOnBrokenPipe(process.stdout, brokenPipe);
  stopOnBrokenPipe(process.stderr, brokenPipe);
  return {
    out: (text) => void process.stdout.write(text),
    err: (text) => void process.stderr.write(text),
    outBytes: process.stdout,
    env: process.env,
    cwd: process.cwd(),
    homedir: os.homedir(),
    stdin: process.stdin,
    stderrIsTTY: process.stderr.isTTY === true,
    stdoutIsTTY: process.stdout.isTTY === true,
    signal: interrupt.signal,
  };
}

/**
 * When whoever reads `stream` went away (EPIPE: `drover job <id> --logs | head -1`), calls `stop`
 * (the process exits 141, quietly, as a Unix tool that SIGPIPE ended) rather than crashing on an
 * unhandled 'error' event; another write error still throws.
 */
export function stopOnBrokenPipe(stream: EventEmitter, stop: () => void): void {
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') throw error;
    stop();
  });
}

/** Whether progress may be drawn: stderr is a terminal, and not a CI log (`CI` set) or a dumb one. */
export function showsProgress(rt: Runtime): boolean {
  const ci = rt.env.CI;
  return rt.stderrIsTTY && (ci === undefined || ci === '' || ci === 'false' || ci === '0') && rt.env.TERM !== 'dumb';
}

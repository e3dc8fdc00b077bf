import fs from 'node:fs';
import { StringDecoder } from 'node:string_decoder';
import { recordLevel, type LogRecord } from '@drover/shared';
import { AgentError } from '../errors.js';
import { isPermissionError, ownerOf, userLabel } from '../state/owner.js';
import { logFile, logFilesInOrder } from './log-files.js';

export interface LogFilter {
  /** A job id or a part of it (the `e3f40516` the readable lines show), case-insensitive. */
  job?: string;
  /** The lowest level shown (pino number: 40 = warn). */
  minLevel?: number;
}

/** One line of the log: its text and, when it is JSON, the record. */
export interface LogLine {
  text: string;
  record: LogRecord | null;
}

export function matches(line: LogLine, filter: LogFilter): boolean {
  if (filter.job === undefined && filter.minLevel === undefined) return true;
  const record = line.record;
  if (!record) return false; // not a log record: shown only without filters
  if (filter.job !== undefined) {
    if (typeof record.jobId !== 'string' || !record.jobId.toLowerCase().includes(filter.job.toLowerCase()))
      return false;
  }
  if (filter.minLevel !== undefined && recordLevel(record) < filter.minLevel) return false;
  return true;
}

/**
 * Reads the log files in order (`agent.log.4` ... `agent.log.1`, `agent.log`) and calls
 * `onLine` for each line matching `filter`. Returns the tail of the current file, positioned
 * after what was read, for `followLogs`.
 */
export function readLogs(stateDir: string, filter: LogFilter, onLine: (line: LogLine) => void): FileTail {
  const files = logFilesInOrder(stateDir);
  const current = new FileTail(logFile(stateDir));
  current.open(); // first, so that a rotation while we read the older files loses nothing
  // Not "no log lines yet": the log is there, this user may not read it (the service's, 0700).
  if (current.denied) {
    const owner = ownerOf(current.file);
    const as = owner === null || owner === process.getuid?.() ? '' : ` or as ${userLabel(owner)}`;
    throw new AgentError('bad_state', `cannot read ${current.file}: permission denied (run it with sudo${as})`);
  }
  for (const file of files.slice(0, -1)) {
    const tail = new FileTail(file);
    if (!tail.open()) continue;
    tail.readAvailable((line) => emit(line, filter, onLine));
    tail.readRest((line) => emit(line, filter, onLine));
    tail.close();
  }
  current.readAvailable((line) => emit(line, filter, onLine));
  return current;
}

/**
 * Follows the current log file from where `tail` stands: new lines as they are written, across
 * rotations (the rest of the rotated file is read before the new one). Ends when `signal` aborts.
 */
export async function followLogs(
  tail: FileTail,
  filter: LogFilter,
  onLine: (line: LogLine) => void,
  signal: AbortSignal,
  pollMs = 250,
): Promise<void> {
  const handle = (line: string) => emit(line, filter, onLine);
  try {
    while (!signal.aborted) {
      tail.readAvailable(handle);
      if (tail.replaced()) {
        tail.readAvailable(handle);
        tail.readRest(handle);
        tail.close();
        tail.open();
        tail.readAvailable(handle);
      }
      await sleep(pollMs, signal);
    }
  } finally {
    tail.close();
  }
}

function emit(text: string, filter: LogFilter, onLine: (line: LogLine) => void): void {
  if (text.trim() === '') return;
  let record: LogRecord | null = null;
  if (text.startsWith('{')) {
    try {
      const parsed = JSON.parse(text) as unknown;
      // A record of the agent's logger has its level and time; any other JSON (a line damaged by a
      // crash, `{}`) is shown as the text it is rather than as an empty INFO line.
      if (isRecord(parsed)) record = parsed;
    } catch {
      record = null;
    }
  }
  const line = { text, record };
  if (matches(line, filter)) onLine(line);
}

function isRecord(value: unknown): value is LogRecord {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const { level, time } = value as { level?: unknown; time?: unknown };
  return (
    (typeof level === 'number' || typeof level === 'string') && (typeof time === 'number' || typeof time === 'string')
  );
}

/** Reads a file from an offset onwards, line by line, keeping a partial last line for later. */
export class FileTail {
  #fd: number | null = null;
  #ino: number | null = null;
  #offset = 0;
  #partial = '';
  #decoder = new StringDecoder('utf8');
  #denied = false;
  readonly #buffer = Buffer.alloc(64 * 1024);

  constructor(readonly file: string) {}

  /** The last open failed for want of permission (else it was missing, or opened). */
  get denied(): boolean {
    return this.#denied;
  }

  /** Opens the file (from its start); false when it does not exist or cannot be read (`denied`). */
  open(): boolean {
    this.close();
    this.#denied = false;
    try {
      this.#fd = fs.openSync(this.file, 'r');
      this.#ino = fs.fstatSync(this.#fd).ino;
      this.#offset = 0;
      this.#partial = '';
      this.#decoder = new StringDecoder('utf8');
      return true;
    } catch (error) {
      this.#fd = null;
      this.#ino = null;
      this.#denied = isPermissionError(error);
      return false;
    }
  }

  /** Calls `onLine` for each complete line written since the last call. */
  readAvailable(onLine: (line: string) => void): void {
    if (this.#fd === null && !this.open()) return;
    for (;;) {
      const n = fs.readSync(this.#fd!, this.#buffer, 0, this.#buffer.length, this.#offset);
      if (n <= 0) return;
      this.#offset += n;
      const text = this.#partial + this.#decoder.write(this.#buffer.subarray(0, n));
      const lines = text.split('\n');
      this.#partial = lines.pop() ?? '';
      for (const line of lines) onLine(line);
    }
  }

  /** The last line even without its newline (the file will not grow any more). */
  readRest(onLine: (line: string) => void): void {
    const rest = this.#partial + this.#decoder.end();
    if (rest) onLine(rest);
    this.#partial = '';
  }

  /** True when the path now names another file (rotated) or none, and we have one open. */
  replaced(): boolean {
    if (this.#fd === null) return false;
    try {
      return fs.statSync(this.file).ino !== this.#ino;
    } catch {
      return false; // removed and not yet recreated: keep reading the old one
    }
  }

  close(): void {
    if (this.#fd !== null) fs.closeSync(this.#fd);
    this.#fd = null;
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
  });
}

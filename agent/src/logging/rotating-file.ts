import fs from 'node:fs';
import path from 'node:path';
import { rotatedFile } from './log-files.js';

export interface RotatingFileOptions {
  /** Rotate before a write would make the file larger than this (bytes). */
  maxBytes: number;
  /** How many files to keep in all, the current one included (`agent.log` + `agent.log.1..n-1`). */
  maxFiles: number;
}

/**
 * A synchronous, size-rotated append-only file for pino (a "destination": any object with
 * `write(line)`). Synchronous on purpose: pino's transports run in worker threads, which a
 * single executable cannot load, and a synchronous append loses nothing when the process dies.
 * One line is one `write`, and rotation happens between lines: `agent.log` is renamed to
 * `agent.log.1` (after shifting the older ones; the oldest falls off) and a new file is opened.
 * A write that fails (disk full, the state directory removed) drops the line rather than throwing into the
 * code that logged it (`write` answers false, and `lastError` says why); the file is reopened at
 * the next write. A line cut short (the disk filled
 * up in the middle of it, or a crash did) is not continued by the next one: that one begins on a
 * line of its own, so that every other line stays whole JSON for `drover-agent logs`.
 */
export class RotatingFile {
  #fd: number | null = null;
  #ino = 0;
  #size = 0;
  #lastCheck = 0;
  /** The file does not end with a newline (a line cut short): the next write starts a new line. */
  #torn = false;
  #lastError: unknown = null;
  readonly #options: RotatingFileOptions;

  constructor(
    readonly file: string,
    options: RotatingFileOptions,
  ) {
    this.#options = options;
    this.#open();
  }

  write(line: string): boolean {
    try {
      const bytes = Buffer.byteLength(line);
      this.#checkStillOurs();
      if (this.#fd !== null && this.#size > 0 && this.#size + bytes > this.#options.maxBytes) this.#rotate();
      if (this.#fd === null) this.#open();
      if (this.#fd === null) return false;
      const text = this.#torn ? `\n${line}` : line;
      const length = Buffer.byteLength(text);
      const written = fs.writeSync(this.#fd, text);
      this.#size += written;
      if (written < length) {
        // A full disk takes part of a line: the rest is dropped, and the line ends torn.
        if (written > 0) this.#torn = true;
        this.#lastError = Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
        return false;
      }
      this.#torn = false;
      this.#lastError = null;
      return true;
    } catch (error) {
      this.#lastError = error;
      this.#closeFd();
      return false;
    }
  }

  /** Why the last write failed (an fs error: ENOSPC, EROFS, ...), or null when it succeeded. */
  get lastError(): unknown {
    return this.#lastError;
  }

  close(): void {
    this.#closeFd();
  }

  #open(): void {
    try {
      // Readable too: its last byte tells whether a failed write (or a crash) left a line torn.
      this.#fd = openAppending(this.file);
      const stat = fs.fstatSync(this.#fd);
      this.#size = stat.size;
      this.#ino = stat.ino;
      this.#torn = stat.size > 0 && lastByte(this.#fd, stat.size) !== 0x0a;
    } catch (error) {
      this.#lastError = error;
      this.#closeFd();
    }
  }

  #rotate(): void {
    this.#closeFd();
    const keep = Math.max(1, this.#options.maxFiles);
    if (keep === 1) {
      fs.rmSync(this.file, { force: true });
    } else {
      fs.rmSync(rotatedFile(this.file, keep - 1), { force: true });
      for (let n = keep - 2; n >= 1; n--) renameIfExists(rotatedFile(this.file, n), rotatedFile(this.file, n + 1));
      renameIfExists(this.file, rotatedFile(this.file, 1));
    }
    this.#open();
  }

  /** Once a second: when someone removed or moved the file (logrotate, a technician), start a new one. */
  #checkStillOurs(): void {
    const now = Date.now();
    if (this.#fd === null || now - this.#lastCheck < 1000) return;
    this.#lastCheck = now;
    let ino: number | null = null;
    try {
      ino = fs.statSync(this.file).ino;
    } catch {
      ino = null;
    }
    if (ino !== this.#ino) {
      this.#closeFd();
      this.#open();
    }
  }

  #closeFd(): void {
    if (this.#fd !== null) {
      try {
        fs.closeSync(this.#fd);
      } catch {
        // already closed
      }
    }
    this.#fd = null;
  }
}

/**
 * Opens the file to append; when its directory is gone (a technician cleared `logs/` to free
 * space while the agent ran), makes that directory again (0700, as the agent made it), only it:
 * without, every later line went to standard error until a restart, and `drover-agent logs` said
 * there were none. A state directory gone as a whole stays gone (its lines go to standard error).
 */
function openAppending(file: string): number {
  try {
    return fs.openSync(file, 'a+', 0o600);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    try {
      fs.mkdirSync(path.dirname(file), { mode: 0o700 });
    } catch {
      throw error; // its parent is gone too, or it cannot be made: said as the open's failure
    }
    return fs.openSync(file, 'a+', 0o600);
  }
}

function lastByte(fd: number, size: number): number | null {
  const byte = Buffer.alloc(1);
  return fs.readSync(fd, byte, 0, 1, size - 1) === 1 ? byte[0]! : null;
}

function renameIfExists(from: string, to: string): void {
  try {
    fs.renameSync(from, to);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
}

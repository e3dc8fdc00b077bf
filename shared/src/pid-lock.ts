import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { readRegularFile } from './regular-file.js';

/**
 * A lock file naming the process that owns a directory: the coordinator's data directory, the
 * agent's state directory. It holds the owner's pid on its first line and, on Linux, a second
 * line telling that process apart from a later one given the same pid (the boot id and the
 * process's start time), so a lock left behind by a crash, a reboot or a killed container is
 * recognised as stale even when its pid has been reused.
 *
 * A lock appears complete or not at all (written aside, then hard-linked into place), so two
 * processes starting at once on a fresh directory cannot both take it. A stale lock, whose
 * process is gone or is a zombie, is taken over; one process at a time may break it (through a
 * `.break` file beside it), so two starting at once after a crash cannot both take it either.
 */

/** The process that holds a lock. */
export interface LockHolder {
  pid: number;
  /** `<boot id>:<start time>` on Linux; null where it cannot be read. */
  start: string | null;
}

/** Thrown when a live process holds the lock: `pid` is that process. */
export class LockHeldError extends Error {
  readonly code = 'lock_held';
  readonly file: string;
  readonly pid: number;

  constructor(file: string, pid: number) {
    super(`${file} is held by the running process ${pid}`);
    this.name = 'LockHeldError';
    this.file = file;
    this.pid = pid;
  }
}

export const isLockHeldError = (error: unknown): error is LockHeldError =>
  error instanceof Error && (error as { code?: unknown }).code === 'lock_held';

/** How long a contender waits for another one breaking the same stale lock. */
const BREAK_WAIT_MS = 2000;
const BREAK_POLL_MS = 10;

/**
 * Takes the lock `file` for the process `pid` (this one by default) and returns the function
 * that releases it (it removes the file only while it is still this holder's). Throws
 * LockHeldError when a live process holds it; other failures (a missing directory, no
 * permission) are thrown as they come, with their `code`.
 */
export function acquirePidLock(file: string, pid = process.pid): () => void {
  const mine = lockContent({ pid, start: processStart(pid) });
  const waitUntil = Date.now() + BREAK_WAIT_MS;
  for (;;) {
    if (createComplete(file, mine)) {
      return () => {
        if (readRaw(file) === mine) fs.rmSync(file, { force: true });
      };
    }
    const raw = readRaw(file);
    if (raw === null) continue; // released meanwhile
    const holder = parseLock(raw);
    if (holder && isHolderRunning(holder, pid)) throw new LockHeldError(file, holder.pid);
    if (!breakStale(file, raw, mine)) {
      if (Date.now() > waitUntil) throw new Error(`${file}: another process is taking this lock over`);
      sleepSync(BREAK_POLL_MS);
    }
  }
}

/**
 * The pid of the live process that holds `file`, or null (no lock, a stale one, or something
 * else than a file at its place, which no process can hold and `acquirePidLock` refuses).
 */
export function lockHolderPid(file: string): number | null {
  let raw: string | null;
  try {
    raw = readRaw(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EINVAL') return null;
    throw error;
  }
  const holder = raw === null ? null : parseLock(raw);
  return holder && isHolderRunning(holder, null) ? holder.pid : null;
}

/**
 * Whether the process `pid` is running: it exists and is not a zombie (a process that exited
 * and that its parent has not collected yet, or that nothing collects at all). Where /proc is
 * missing (not Linux), a zombie cannot be told apart and counts as running.
 */
export function isProcessRunning(pid: number): boolean {
  return processState(pid) !== 'gone';
}

/**
 * The identity of the process `pid` beyond its pid, `<boot id>:<start time in clock ticks>`, or
 * null when it cannot be read (no /proc, or no such process).
 */
export function processStart(pid: number): string | null {
  const state = processState(pid);
  return typeof state === 'object' ? state.start : null;
}

function lockContent(holder: LockHolder): string {
  return holder.start === null ? `${holder.pid}\n` : `${holder.pid}\n${holder.start}\n`;
}

/** The holder a lock file names, or null when its content is not a lock (then it is stale). */
function parseLock(raw: string): LockHolder | null {
  const [first, second] = raw.split('\n');
  const pid = /^\d+$/.test(first?.trim() ?? '') ? Number(first) : Number.NaN;
  if (!Number.isSafeInteger(pid) || pid <= 0) return null;
  return { pid, start: second?.trim() ? second.trim() : null };
}

/**
 * Whether the holder named in a lock still runs: its pid is a running process and, when both
 * are known, that process started when the holder did (otherwise the pid was reused). A lock
 * naming `self` (the pid taking the lock) without a start time is one it left behind earlier.
 */
function isHolderRunning(holder: LockHolder, self: number | null): boolean {
  const state = processState(holder.pid);
  if (state === 'gone') return false;
  if (state === 'running') return holder.pid !== self; // no /proc: nothing more to compare
  if (holder.start === null) return holder.pid !== self;
  return state.start === holder.start;
}

type ProcessState = 'gone' | 'running' | { start: string };

let bootId: string | null | undefined;

function processState(pid: number): ProcessState {
  if (!Number.isSafeInteger(pid) || pid <= 0) return 'gone';
  let stat: string;
  try {
    stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return signalZeroSays(pid); // no /proc (not Linux), or the process is gone or hidden from us
  }
  // pid (comm) state ppid ... starttime (the 22nd field); comm may hold spaces and parentheses.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  if (fields[0] === 'Z' || fields[0] === 'X') return 'gone';
  if (bootId === undefined) {
    try {
      bootId = fs.readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
    } catch {
      bootId = null;
    }
  }
  const ticks = fields[19];
  return ticks ? { start: `${bootId ?? 'boot'}:${ticks}` } : 'running';
}

function signalZeroSays(pid: number): ProcessState {
  try {
    process.kill(pid, 0);
    return 'running';
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM' ? 'running' : 'gone';
  }
}

/**
 * Creates `file` with `content` unless it exists, atomically: the content is written to a file
 * of its own, then hard-linked to `file` (which fails when `file` exists), so no reader ever
 * sees it empty or half written.
 */
function createComplete(file: string, content: string): boolean {
  const aside = `${file}.${process.pid}-${randomBytes(4).toString('hex')}`;
  try {
    // Inside the try: a write that fails after creating the file (a full disk) must not leave an
    // empty `<file>.<pid>-<hex>` behind at every start that fails the same way.
    fs.writeFileSync(aside, content, { flag: 'wx', mode: 0o600 });
    fs.linkSync(aside, file);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  } finally {
    fs.rmSync(aside, { force: true });
  }
}

/**
 * Removes the stale lock whose content was `stale`, as the one contender allowed to (the one
 * that created `<file>.break`). Returns false when another contender is breaking it: the
 * caller waits and looks again. A `.break` file left by a contender that died is removed.
 */
function breakStale(file: string, stale: string, mine: string): boolean {
  const breaker = `${file}.break`;
  if (!createComplete(breaker, mine)) {
    const raw = readRaw(breaker);
    const other = raw === null ? null : parseLock(raw);
    if (raw !== null && !(other && isHolderRunning(other, null))) removeIfStill(breaker, raw);
    return false;
  }
  try {
    removeIfStill(file, stale); // a contender that broke it first has put its own lock there
  } finally {
    removeIfStill(breaker, mine);
  }
  return true;
}

function removeIfStill(file: string, content: string): void {
  if (readRaw(file) === content) fs.rmSync(file, { force: true });
}

/** The lock's content, or null when there is none; what is not a regular file is refused (EINVAL). */
function readRaw(file: string): string | null {
  try {
    return readRegularFile(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
}

function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

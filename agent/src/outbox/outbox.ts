import fs from 'node:fs';
import path from 'node:path';
import { bytesInWords, countOf } from '@drover/shared';
import type { Logger } from 'pino';
import { isAgentError } from '../errors.js';
import { formatDuration } from '../exec/durations.js';
import { listStateDir, readStateFile, writeFileAtomic } from '../state/files.js';
import { parseReport, type Report } from './report.js';

export interface OutboxEntry {
  /** The file's name in the outbox directory; its numeric prefix is the sending order. */
  name: string;
  report: Report;
  /** The file's size. */
  bytes?: number;
  /** A log batch standing for lines dropped from the middle of its job's log (LogGap). */
  gap?: LogGap;
  /** Not on disk: the disk was full. Sent while the agent runs, lost if it stops first. */
  inMemory?: boolean;
}

/** Lines of a job's log the outbox dropped, and their bytes of text. */
export interface LogGap {
  lines: number;
  bytes: number;
}

export interface OutboxOptions {
  /**
   * Called for each file read back that does not hold a report: it is renamed `*.damaged`, or,
   * when it cannot be (a read-only outbox), left where it is and skipped; `reason` says which.
   */
  onDamaged?: (file: string, reason: string) => void;
  /**
   * Says which files cannot be read (a permission, a directory in a file's place, an I/O error),
   * when they are read again, and how that ended (UNREADABLE_RETRY).
   */
  logger?: Pick<Logger, 'error' | 'warn' | 'info'>;
  /** Reads one entry's file (tests pass one that fails as a permission or a disk does). */
  readFile?: (file: string) => string;
  /** The time, for the retries of files that cannot be read (tests pass their own). */
  now?: () => number;
  /** The most bytes of log batches kept per job (MAX_JOB_LOG_BYTES). */
  maxJobLogBytes?: number;
  /** Bytes free for the agent on the outbox's file system (statfs; tests pass their own). */
  freeBytes?: (dir: string) => number;
  /** Below this many free bytes (FREE_SPACE_RESERVE_BYTES) log batches are dropped, not stored. */
  reserveBytes?: number;
  /** Writes one entry's file (writeFileAtomic; tests pass one that fails as a full disk does). */
  writeFile?: (file: string, text: string) => void;
}

/**
 * The most bytes (of files) of one job's log batches the outbox keeps while the coordinator
 * cannot be reached: as much as the coordinator keeps of a job's log by default
 * (DROVER_JOB_LOG_MAX_BYTES, 16 MiB). Past it the middle is dropped as the coordinator does (the
 * first batches within a quarter of it, the newest in the rest, and one line where the gap is).
 */
export const MAX_JOB_LOG_BYTES = 16 * 1024 * 1024;

/**
 * The free space log batches leave on the state directory's file system (64 MiB): below it a
 * batch is dropped rather than stored, so that the journal and the results still fit.
 */
export const FREE_SPACE_RESERVE_BYTES = 64 * 1024 * 1024;

/**
 * When a report file that cannot be read is read again: after `firstMs`, then twice as long each
 * time up to `capMs` (and at each start). It is left in place meanwhile, never taken for damage:
 * what it holds is not known, and a permission given back brings the report back.
 */
export const UNREADABLE_RETRY = { firstMs: 60_000, capMs: 3_600_000 };

/** The system's code of a file error: writeFileAtomic's own error (bad_state) carries it as its cause. */
function errnoCode(error: unknown): string | undefined {
  return ((isAgentError(error) ? error.cause : error) as NodeJS.ErrnoException | undefined)?.code;
}

/** Why a file cannot be read, in a technician's words, its error code last. */
function unreadableCause(error: unknown): string {
  const code = (error as NodeJS.ErrnoException).code;
  switch (code) {
    case 'EACCES':
    case 'EPERM':
      return `permission denied (${code}): it belongs to another user or is not readable; give it back to the agent's user (chown, chmod 600)`;
    case 'EISDIR':
      return 'a directory stands in its place (EISDIR)';
    case 'EIO':
      return 'an input/output error (EIO): the disk or its file system may be failing';
    case 'EINVAL':
      return (error as Error).message; // readStateFile's words: a FIFO or a device in its place
    default:
      return code === undefined ? (error as Error).message : `${code}: ${(error as Error).message}`;
  }
}

/** Why a damaged file cannot be renamed `*.damaged`, in a technician's words, its error code last. */
function renameCause(error: unknown): string {
  const code = (error as NodeJS.ErrnoException).code;
  switch (code) {
    case 'EROFS':
      return 'the file system is read-only (EROFS)';
    case 'EACCES':
    case 'EPERM':
      return `permission denied (${code}): the agent's user may not write in the outbox directory`;
    case 'EISDIR':
    case 'ENOTEMPTY':
    case 'EEXIST':
      return `a directory already has that name (${code})`;
    default:
      return code === undefined ? (error as Error).message : `${code}: ${(error as Error).message}`;
  }
}

interface Unreadable {
  /** When it is read again. */
  at: number;
  /** The wait after that, if it fails again. */
  nextDelayMs: number;
  cause: string;
}

/** The line that stands for dropped lines (its `seq` is the last dropped line's). */
export const gapText = (gap: LogGap, maxBytes: number): string =>
  `[drover-agent] ${countOf(gap.lines, 'line')} (${bytesInWords(gap.bytes)}) dropped here: the coordinator could not be ` +
  `reached and this job's log passed the ${bytesInWords(maxBytes)} the agent keeps of it meanwhile, or the disk was ` +
  'nearly full; its first lines and its newest are kept';

const textBytes = (report: Report): number =>
  report.kind === 'logs' ? report.body.lines.reduce((sum, line) => sum + Buffer.byteLength(line.text), 0) : 0;

function defaultFreeBytes(dir: string): number {
  try {
    const stat = fs.statfsSync(dir);
    return stat.bavail * stat.bsize;
  } catch {
    return Infinity;
  }
}

/** Report files: `<12-digit sequence>-<kind>-<jobId>.json`. */
const ENTRY = /^(\d{12})-[a-z]+-.+\.json$/;

/** How many reports wait in an outbox directory (0 when there is none), without opening it. */
export function countWaitingReports(dir: string): number {
  try {
    return fs.readdirSync(dir).filter((name) => ENTRY.test(name)).length;
  } catch {
    return 0;
  }
}

/**
 * Reports not delivered yet, one JSON file each in `<state-dir>/outbox/`, written atomically
 * (temporary file, fsync, rename) and named so that the directory listing is the sending order.
 * It survives an agent restart: `open` reads back what a previous run left.
 *
 * What it keeps of a job's log is bounded (MAX_JOB_LOG_BYTES, and FREE_SPACE_RESERVE_BYTES of
 * free space): past it, batches from the middle are dropped and one batch of one line says how
 * many lines were, where they were. Other reports (accept, start, results, rejections) are
 * always kept: when the disk is full, log batches are dropped to make room for them, and a report
 * that still cannot be written is kept in memory (OutboxEntry.inMemory).
 */
export class Outbox {
  #entries: OutboxEntry[] = [];
  #nextSeq = 1;
  readonly #onDamaged: (file: string, reason: string) => void;
  readonly #maxJobLogBytes: number;
  readonly #freeBytes: (dir: string) => number;
  readonly #reserveBytes: number;
  readonly #writeFile: (file: string, text: string) => void;
  readonly #readFile: (file: string) => string;
  readonly #logger: Pick<Logger, 'error' | 'warn' | 'info'> | null;
  readonly #now: () => number;
  /** The report files that could not be read, by name: left in place, read again later. */
  readonly #unreadable = new Map<string, Unreadable>();

  private constructor(
    readonly dir: string,
    options: OutboxOptions,
  ) {
    this.#onDamaged = options.onDamaged ?? (() => {});
    this.#maxJobLogBytes = options.maxJobLogBytes ?? MAX_JOB_LOG_BYTES;
    this.#freeBytes = options.freeBytes ?? defaultFreeBytes;
    this.#reserveBytes = options.reserveBytes ?? FREE_SPACE_RESERVE_BYTES;
    this.#writeFile = options.writeFile ?? writeFileAtomic;
    this.#readFile = options.readFile ?? readStateFile;
    this.#logger = options.logger ?? null;
    this.#now = options.now ?? Date.now;
  }

  /** `options` as a function: the `onDamaged` callback alone. */
  static open(dir: string, options: OutboxOptions | ((file: string, reason: string) => void) = {}): Outbox {
    const names = listStateDir(dir, 'the reports waiting for the coordinator');
    const outbox = new Outbox(dir, typeof options === 'function' ? { onDamaged: options } : options);
    outbox.#load(names);
    return outbox;
  }

  get size(): number {
    return this.#entries.length;
  }

  /** How many report files could not be read, and wait to be read again. */
  get unreadable(): number {
    return this.#unreadable.size;
  }

  /** When the first of the files that could not be read is due to be read again; null if none. */
  nextUnreadableRetryAt(): number | null {
    let next: number | null = null;
    for (const { at } of this.#unreadable.values()) if (next === null || at < next) next = at;
    return next;
  }

  /**
   * Reads again the files that could not be read whose time has come (UNREADABLE_RETRY): a
   * report read is put back in its place in the sending order, and returns in the count; a file
   * read whose content is not a report is damaged as at `open`; one still unreadable waits
   * longer (said again only when its cause changed); one gone is forgotten, said.
   */
  retryUnreadable(): number {
    const now = this.#now();
    let added = 0;
    for (const [name, waiting] of [...this.#unreadable]) {
      if (waiting.at > now) continue;
      const file = path.join(this.dir, name);
      const read = this.#read(name);
      if ('error' in read) {
        if ((read.error as NodeJS.ErrnoException).code === 'ENOENT') {
          this.#unreadable.delete(name);
          this.#logger?.warn(
            { file },
            `${file}, which could not be read, is gone: the report it held will not be sent`,
          );
          continue;
        }
        const cause = unreadableCause(read.error);
        this.#unreadable.set(name, {
          at: now + waiting.nextDelayMs,
          nextDelayMs: Math.min(waiting.nextDelayMs * 2, UNREADABLE_RETRY.capMs),
          cause,
        });
        if (cause !== waiting.cause) this.#sayUnreadable(file, cause, waiting.nextDelayMs);
        continue;
      }
      this.#unreadable.delete(name);
      if (read.entry === null) continue;
      const at = this.#entries.findIndex((e) => e.name > name);
      this.#entries.splice(at < 0 ? this.#entries.length : at, 0, read.entry);
      added += 1;
      this.#logger?.info({ file }, `read ${file} at last: its report is sent with the outbox, in its turn`);
    }
    return added;
  }

  /** The entries in sending order. */
  entries(): readonly OutboxEntry[] {
    return this.#entries;
  }

  has(jobId: string, kind?: Report['kind']): boolean {
    return this.#entries.some((e) => e.report.jobId === jobId && (kind === undefined || e.report.kind === kind));
  }

  /**
   * Stores a report durably (it is on disk when this returns) after every report stored before
   * it. A log batch may be dropped instead, or make older ones of its job be dropped (see the
   * class); it is then counted in its job's gap line and null is returned. Any other report is
   * stored: when it cannot be written even after the log batches were dropped to make room, it
   * is kept in memory (`inMemory`). Throws only for a log batch that could not be written.
   */
  append(report: Report): OutboxEntry | null {
    if (report.kind === 'logs') return this.#appendLogs(report);
    try {
      return this.#write(report);
    } catch (error) {
      // A full disk: the log batches make room for what the job's outcome depends on. The file's
      // error is the cause of writeFileAtomic's (whose own code is bad_state): read on the error
      // itself, a full disk never made room, and a result was kept in memory only, lost with the
      // agent, beside megabytes of log batches.
      const code = errnoCode(error);
      if (!(code === 'ENOSPC' || code === 'EDQUOT') || !this.#dropAllLogs()) return this.#keepInMemory(report);
      try {
        return this.#write(report);
      } catch {
        return this.#keepInMemory(report);
      }
    }
  }

  remove(entry: OutboxEntry): void {
    if (!entry.inMemory) fs.rmSync(path.join(this.dir, entry.name), { force: true });
    if (this.#entries[0] === entry) this.#entries.shift();
    else this.#entries = this.#entries.filter((e) => e !== entry);
  }

  /** Bytes of one job's log batches kept now (their gap line's included). */
  logBytes(jobId: string): number {
    return this.#jobLogs(jobId).reduce((sum, e) => sum + (e.bytes ?? 0), 0);
  }

  #write(report: Report, seq = this.#nextSeq++): OutboxEntry {
    const name = `${String(seq).padStart(12, '0')}-${report.kind}-${safeName(report.jobId)}.json`;
    const text = `${JSON.stringify(report)}\n`;
    const file = path.join(this.dir, name);
    try {
      this.#writeFile(file, text);
    } catch (error) {
      // outbox/ removed while the agent ran (cleared by hand): made again, as at the next start,
      // where every report but the log batches was kept in memory only until a restart.
      if (errnoCode(error) !== 'ENOENT' || fs.existsSync(this.dir)) throw error;
      fs.mkdirSync(this.dir, { mode: 0o700 });
      this.#writeFile(file, text);
    }
    const entry: OutboxEntry = { name, report, bytes: Buffer.byteLength(text) };
    this.#entries.push(entry);
    return entry;
  }

  #keepInMemory(report: Report): OutboxEntry {
    const seq = this.#nextSeq++;
    const entry: OutboxEntry = {
      name: `${String(seq).padStart(12, '0')}-${report.kind}-memory`,
      report,
      inMemory: true,
    };
    this.#entries.push(entry);
    return entry;
  }

  #jobLogs(jobId: string): OutboxEntry[] {
    return this.#entries.filter((e) => e.report.jobId === jobId && e.report.kind === 'logs' && !e.inMemory);
  }

  /**
   * A job's log batch: stored, unless the job's batches would pass #maxJobLogBytes (the middle
   * goes, as the coordinator's cap does) or the disk is nearly full (the batch goes).
   */
  #appendLogs(report: Extract<Report, { kind: 'logs' }>): OutboxEntry | null {
    const size = Buffer.byteLength(JSON.stringify(report)) + 1;
    if (this.#freeBytes(this.dir) - size < this.#reserveBytes) {
      this.#dropIntoGap(report.jobId, [], report);
      return null;
    }
    const logs = this.#jobLogs(report.jobId);
    const gapIndex = logs.findIndex((e) => e.gap);
    // The head: the first batches within a quarter of the limit (fixed once a gap exists).
    let headEnd = gapIndex;
    if (headEnd < 0) {
      let head = 0;
      headEnd = 0;
      while (headEnd < logs.length && (head += logs[headEnd]!.bytes ?? 0) <= this.#maxJobLogBytes / 4) headEnd += 1;
    }
    const total = logs.reduce((sum, e) => sum + (e.bytes ?? 0), 0);
    if (total + size <= this.#maxJobLogBytes) return this.#writeLogs(report);
    // Drop the oldest batches after the head until the rest, a gap line and this batch fit.
    const GAP_BYTES = 1024; // a gap batch's file, generously
    const tail = logs.slice(gapIndex < 0 ? headEnd : gapIndex + 1);
    const kept = logs.slice(0, gapIndex < 0 ? headEnd : gapIndex).reduce((sum, e) => sum + (e.bytes ?? 0), 0);
    let tailBytes = tail.reduce((sum, e) => sum + (e.bytes ?? 0), 0);
    const dropped: OutboxEntry[] = [];
    while (tail.length > 0 && kept + GAP_BYTES + tailBytes + size > this.#maxJobLogBytes) {
      const oldest = tail.shift()!;
      tailBytes -= oldest.bytes ?? 0;
      dropped.push(oldest);
    }
    if (kept + GAP_BYTES + size > this.#maxJobLogBytes) {
      // The batch alone does not fit beside the head: it goes into the gap too.
      this.#dropIntoGap(report.jobId, dropped, report);
      return null;
    }
    this.#dropIntoGap(report.jobId, dropped, null);
    return this.#writeLogs(report);
  }

  #writeLogs(report: Report): OutboxEntry | null {
    try {
      return this.#write(report);
    } catch {
      // No room (the reserve was not enough, or no statfs): the batch joins the gap.
      this.#dropIntoGap(report.jobId, [], report as Extract<Report, { kind: 'logs' }>);
      return null;
    }
  }

  /**
   * Drops `entries` (log batches of the job, oldest first, right after its gap or its head) and
   * `report` (a batch never stored, newer than all), counting their lines in the job's gap line:
   * the gap batch is written in the place of the first batch dropped, or updated where it is,
   * and its line takes the `seq` and time of the last line dropped. When the job has a gap
   * already, every batch between it and the ones dropped is dropped too (the gap stays one).
   */
  #dropIntoGap(jobId: string, entries: OutboxEntry[], report: Extract<Report, { kind: 'logs' }> | null): void {
    const logs = this.#jobLogs(jobId);
    const gapEntry = logs.find((e) => e.gap) ?? null;
    let drop = entries;
    if (report && gapEntry) {
      // Lines newer than every kept batch: the batches after the gap go with them.
      drop = logs.slice(logs.indexOf(gapEntry) + 1);
    } else if (drop.length === 0 && !report) {
      return;
    }
    const gap: LogGap = { ...(gapEntry?.gap ?? { lines: 0, bytes: 0 }) };
    let last: { seq: number; at: string } | null = null;
    for (const source of [...drop.map((e) => e.report), ...(report ? [report] : [])]) {
      if (source.kind !== 'logs') continue;
      gap.lines += source.body.lines.length;
      gap.bytes += textBytes(source);
      const line = source.body.lines.at(-1);
      if (line) last = { seq: line.seq, at: line.at };
    }
    if (!last) return;
    const gone = new Set(drop);
    for (const entry of drop) fs.rmSync(path.join(this.dir, entry.name), { force: true });
    const place = gapEntry ?? drop[0] ?? null;
    const gapReport: Report = {
      kind: 'logs',
      jobId,
      body: {
        lines: [{ seq: last.seq, at: last.at, stream: 'system', step: null, text: gapText(gap, this.#maxJobLogBytes) }],
      },
    };
    const text = `${JSON.stringify({ ...gapReport, gap })}\n`;
    const index = place ? this.#entries.indexOf(place) : -1;
    const name = place?.name ?? `${String(this.#nextSeq++).padStart(12, '0')}-logs-${safeName(jobId)}.json`;
    let written = true;
    try {
      this.#writeFile(path.join(this.dir, name), text);
    } catch {
      written = false; // a full disk: the lines are gone all the same; the gap line is lost with them
      if (gapEntry) fs.rmSync(path.join(this.dir, gapEntry.name), { force: true });
    }
    const entry: OutboxEntry = { name, report: gapReport, bytes: Buffer.byteLength(text), gap };
    if (place && index >= 0) {
      if (written) this.#entries[index] = entry;
      else gone.add(place);
    } else if (written) {
      this.#entries.push(entry);
    }
    this.#entries = this.#entries.filter((e) => !gone.has(e) || (written && e === entry));
  }

  /** Makes room on a full disk: every log batch goes into its job's gap. False when there was none. */
  #dropAllLogs(): boolean {
    const jobs = new Set(
      this.#entries.filter((e) => e.report.kind === 'logs' && !e.gap && !e.inMemory).map((e) => e.report.jobId),
    );
    for (const jobId of jobs) {
      this.#dropIntoGap(
        jobId,
        this.#jobLogs(jobId).filter((e) => !e.gap),
        null,
      );
    }
    return jobs.size > 0;
  }

  #load(listing: readonly string[]): void {
    const names = listing.filter((name) => ENTRY.test(name)).sort();
    for (const name of names) {
      const seq = Number(ENTRY.exec(name)![1]);
      this.#nextSeq = Math.max(this.#nextSeq, seq + 1);
      const read = this.#read(name);
      if ('error' in read) {
        // Not damage: what it holds is not known. It stays, and is read again later.
        const cause = unreadableCause(read.error);
        this.#unreadable.set(name, {
          at: this.#now() + UNREADABLE_RETRY.firstMs,
          nextDelayMs: Math.min(UNREADABLE_RETRY.firstMs * 2, UNREADABLE_RETRY.capMs),
          cause,
        });
        this.#sayUnreadable(path.join(this.dir, name), cause, UNREADABLE_RETRY.firstMs);
      } else if (read.entry) {
        this.#entries.push(read.entry);
      }
    }
  }

  /**
   * One report file read back: its entry; null when what was read is not a report (it is
   * renamed `*.damaged`, or left in place when it cannot be, and said); `error` when it cannot be
   * read at all (nothing is done).
   */
  #read(name: string): { entry: OutboxEntry | null } | { error: unknown } {
    const file = path.join(this.dir, name);
    let text: string;
    try {
      text = this.#readFile(file);
    } catch (error) {
      return { error };
    }
    let report: Report | null = null;
    let raw: unknown = null;
    try {
      raw = JSON.parse(text);
      report = parseReport(raw);
    } catch {
      report = null;
    }
    if (!report) {
      try {
        fs.renameSync(file, `${file}.damaged`);
      } catch (error) {
        // A read-only outbox, say: the agent goes on without it, and says it again at each start.
        this.#onDamaged(
          file,
          `not a report; it cannot be renamed *.damaged (${renameCause(error)}), so it stays ` +
            'where it is, skipped at each start: move it out of the outbox or remove it',
        );
        return { entry: null };
      }
      this.#onDamaged(file, 'not a report (renamed *.damaged)');
      return { entry: null };
    }
    const gap = (raw as { gap?: unknown }).gap as LogGap | undefined;
    const isGap =
      report.kind === 'logs' &&
      typeof gap === 'object' &&
      gap !== null &&
      Number.isSafeInteger(gap.lines) &&
      Number.isSafeInteger(gap.bytes);
    const bytes = Buffer.byteLength(text);
    return { entry: { name, report, bytes, ...(isGap ? { gap: { lines: gap.lines, bytes: gap.bytes } } : {}) } };
  }

  #sayUnreadable(file: string, cause: string, retryInMs: number): void {
    this.#logger?.error(
      { file },
      `cannot read the report ${file}: ${cause}. It stays in the outbox, not sent until it can be read: ` +
        `read again in ${formatDuration(retryInMs)}, then less often (every ${formatDuration(UNREADABLE_RETRY.capMs)} at most), and at each start`,
    );
  }
}

/** A job id as part of a file name (ids are UUIDs; anything else is made safe). */
const safeName = (jobId: string): string => jobId.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 100);

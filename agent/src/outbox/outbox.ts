import fs from 'node:fs';
import path from 'node:path';
import { writeFileAtomic } from '../state/files.js';
import { parseReport, type Report } from './report.js';

export interface OutboxEntry {
  /** The file's name in the outbox directory; its numeric prefix is the sending order. */
  name: string;
  report: Report;
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
 */
export class Outbox {
  #entries: OutboxEntry[] = [];
  #nextSeq = 1;
  readonly #onDamaged: (file: string, reason: string) => void;

  private constructor(
    readonly dir: string,
    /** Called for each file that cannot be read back (it is renamed `*.damaged`). */
    onDamaged: (file: string, reason: string) => void,
  ) {
    this.#onDamaged = onDamaged;
  }

  static open(dir: string, onDamaged: (file: string, reason: string) => void = () => {}): Outbox {
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    const outbox = new Outbox(dir, onDamaged);
    outbox.#load();
    return outbox;
  }

  get size(): number {
    return this.#entries.length;
  }

  /** The entries in sending order. */
  entries(): readonly OutboxEntry[] {
    return this.#entries;
  }

  has(jobId: string, kind?: Report['kind']): boolean {
    return this.#entries.some((e) => e.report.jobId === jobId && (kind === undefined || e.report.kind === kind));
  }

  /** Stores a report durably (it is on disk when this returns) after every report stored before it. */
  append(report: Report): OutboxEntry {
    const seq = this.#nextSeq++;
    const name = `${String(seq).padStart(12, '0')}-${report.kind}-${safeName(report.jobId)}.json`;
    writeFileAtomic(path.join(this.dir, name), `${JSON.stringify(report)}\n`);
    const entry = { name, report };
    this.#entries.push(entry);
    return entry;
  }

  remove(entry: OutboxEntry): void {
    fs.rmSync(path.join(this.dir, entry.name), { force: true });
    this.#entries = this.#entries.filter((e) => e !== entry);
  }

  #load(): void {
    const names = fs
      .readdirSync(this.dir)
      .filter((name) => ENTRY.test(name))
      .sort();
    for (const name of names) {
      const file = path.join(this.dir, name);
      const seq = Number(ENTRY.exec(name)![1]);
      this.#nextSeq = Math.max(this.#nextSeq, seq + 1);
      let report: Report | null = null;
      try {
        report = parseReport(JSON.parse(fs.readFileSync(file, 'utf8')));
      } catch {
        report = null;
      }
      if (!report) {
        fs.renameSync(file, `${file}.damaged`);
        this.#onDamaged(file, 'not a report (renamed *.damaged)');
        continue;
      }
      this.#entries.push({ name, report });
    }
  }
}

/** A job id as part of a file name (ids are UUIDs; anything else is made safe). */
const safeName = (jobId: string): string => jobId.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 100);

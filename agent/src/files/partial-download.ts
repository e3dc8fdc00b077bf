import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { readStateFile, writeFileAtomic } from '../state/files.js';

/**
 * What is known of a partial download, in a small JSON record beside its bytes: enough to tell,
 * after a restart, whether the bytes on disk are a beginning of the file now wanted.
 */
export interface PartialRecord {
  version: 1;
  /** The expected SHA-256 (lowercase hex) and size: the file's identity. */
  sha256: string;
  size: number;
  /** Where the bytes came from, without its query (a presigned URL's signature is not kept). */
  url: string;
  /** The server's ETag for the bytes, when it gave a strong one: a resumed request must match it. */
  etag: string | null;
  /** What the download is for (`artifact:<application id>`): another file of the same slot replaces it. */
  slot: string | null;
  startedAt: string;
}

const PART = '.part';
const RECORD = '.json';
/** Partials this process is writing: a second download of the same bytes at once gets a file of its own. */
const claimed = new Set<string>();

/**
 * The bytes of one download on their way to the target (`<sha256>.part`) and their record
 * (`<sha256>.json`) in the downloads directory, kept when a download stops so that the next one of
 * the same bytes (after a link drop, a new job, an agent restart) goes on from there. A partial
 * already being written by this process is not shared: the second download gets a temporary one,
 * removed when it ends.
 */
export class PartialDownload {
  readonly part: string;
  readonly record: string;
  /** Not kept for a later download (none is wanted, or the usual one was claimed). */
  readonly temporary: boolean;
  #released = false;

  private constructor(dir: string, name: string, temporary: boolean) {
    this.part = path.join(dir, `${name}${PART}`);
    this.record = path.join(dir, `${name}${RECORD}`);
    this.temporary = temporary;
  }

  /** `keep`: the partial is kept for a later download when this one stops (else it is temporary). */
  static claim(dir: string, sha256: string, keep = true): PartialDownload {
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    const key = path.join(dir, sha256);
    if (!keep) return new PartialDownload(dir, `.download-${randomBytes(6).toString('hex')}`, true);
    if (claimed.has(key)) return new PartialDownload(dir, `${sha256}-${randomBytes(4).toString('hex')}`, true);
    claimed.add(key);
    return new PartialDownload(dir, sha256, false);
  }

  /** The record, or null when there is none or it cannot be read. */
  load(): PartialRecord | null {
    if (this.temporary) return null;
    try {
      const record = JSON.parse(readStateFile(this.record)) as PartialRecord;
      return record?.version === 1 ? record : null;
    } catch {
      return null;
    }
  }

  save(record: PartialRecord): void {
    writeFileAtomic(this.record, `${JSON.stringify(record)}\n`, { durable: false });
  }

  /** The bytes on disk (0: none). */
  size(): number {
    return fs.statSync(this.part, { throwIfNoEntry: false })?.size ?? 0;
  }

  /** Removes the bytes and the record. */
  discard(): void {
    fs.rmSync(this.part, { force: true });
    fs.rmSync(this.record, { force: true });
  }

  /** The download ended: a temporary partial is removed, the usual one kept for the next download. */
  release(): void {
    if (this.#released) return;
    this.#released = true;
    if (this.temporary) this.discard();
    else claimed.delete(this.part.slice(0, -PART.length));
  }
}

/** Removes the partials of other files recorded for `slot` (an older release of the same application). */
export function discardOtherPartials(dir: string, slot: string, keep: string): number {
  let removed = 0;
  for (const name of safeList(dir)) {
    if (!name.endsWith(RECORD)) continue;
    const base = name.slice(0, -RECORD.length);
    if (base === keep || claimed.has(path.join(dir, base))) continue;
    let record: Partial<PartialRecord> | null = null;
    try {
      record = JSON.parse(readStateFile(path.join(dir, name))) as Partial<PartialRecord>;
    } catch {
      continue;
    }
    if (record?.slot !== slot) continue;
    fs.rmSync(path.join(dir, `${base}${PART}`), { force: true });
    fs.rmSync(path.join(dir, name), { force: true });
    removed += 1;
  }
  return removed;
}

/**
 * Removes the partial downloads (bytes and records) untouched for more than `olderThanMs`: no
 * download came back for them. Run at the agent's start, with the job retention. Returns how
 * many files were removed.
 */
export function prunePartials(dir: string, olderThanMs: number, now = Date.now()): number {
  const newest = new Map<string, number>();
  for (const name of safeList(dir)) {
    const stat = fs.statSync(path.join(dir, name), { throwIfNoEntry: false });
    if (!stat?.isFile()) continue;
    const base = name.replace(/\.(part|json)$/, '');
    newest.set(base, Math.max(newest.get(base) ?? 0, stat.mtimeMs));
  }
  let removed = 0;
  for (const name of safeList(dir)) {
    const base = name.replace(/\.(part|json)$/, '');
    const touched = newest.get(base);
    if (touched === undefined || now - touched < olderThanMs || claimed.has(path.join(dir, base))) continue;
    fs.rmSync(path.join(dir, name), { force: true });
    removed += 1;
  }
  return removed;
}

function safeList(dir: string): string[] {
  try {
    return fs.readdirSync(dir);
  } catch {
    return [];
  }
}

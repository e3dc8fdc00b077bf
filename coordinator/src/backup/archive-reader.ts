import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import fsp from 'node:fs/promises';
import { Parser, type ReadEntry } from 'tar';
import {
  HEADER_MEMBER,
  InvalidBackupError,
  isDataMember,
  MANIFEST_MEMBER,
  parseHeader,
  parseManifest,
  type ArchiveMember,
  type BackupHeader,
  type Manifest,
} from './archive-format.js';

/** The most a header or manifest member may hold (a manifest lists about 150 bytes per file). */
const MAX_JSON_BYTES = 256 * 1024 * 1024;

/**
 * A member could not be written into the directory (a full disk, a read-only file system): the
 * archive is not to blame. `cause` is the file system's error.
 */
export class ExtractWriteError extends Error {
  constructor(override readonly cause: NodeJS.ErrnoException) {
    super(cause.message, { cause });
    this.name = 'ExtractWriteError';
  }
}

export interface ExtractedBackup {
  header: BackupHeader;
  manifest: Manifest;
}

/**
 * Reads a backup archive (archive-format.ts) and writes its data members into `dir` (an empty
 * directory), each hashed on its way to disk, then checks them against the manifest: every member
 * it lists was written with its size and SHA-256, and nothing else. Throws InvalidBackupError when
 * the file is not a backup, is of a newer format, or is damaged or truncated, ExtractWriteError
 * when `dir` cannot be written; what was written in `dir` is then the caller's to remove. Each
 * file is synced to disk before it is closed; the directories are the caller's to sync.
 */
export async function extractBackup(
  file: string,
  dir: string,
  onBytes: (n: number) => void = () => undefined,
): Promise<ExtractedBackup> {
  let header: BackupHeader | null = null;
  let manifest: Manifest | null = null;
  let failure: Error | null = null;
  const written = new Map<string, ArchiveMember>();
  /** The entries, one after the other (the next one arrives once this one was read). */
  let work: Promise<void> = Promise.resolve();
  const input = fs.createReadStream(file);
  const parser = new Parser({ strict: true, maxDecompressionRatio: Number.POSITIVE_INFINITY });

  const handle = async (entry: ReadEntry): Promise<void> => {
    const name = entry.path;
    if (header === null) {
      if (name !== HEADER_MEMBER || entry.type !== 'File')
        throw new InvalidBackupError('it is not a Drover coordinator backup');
      header = parseHeader(await text(entry));
      return;
    }
    if (manifest !== null) throw new InvalidBackupError(`it holds ${name} after its ${MANIFEST_MEMBER}`);
    if (name === MANIFEST_MEMBER) {
      manifest = parseManifest(await text(entry));
      return;
    }
    if (entry.type !== 'File' || !isDataMember(name))
      throw new InvalidBackupError(`it holds an unexpected member ${name}`);
    if (written.has(name)) throw new InvalidBackupError(`it holds ${name} twice`);
    const target = path.join(dir, name);
    const out = await writing(async () => {
      fs.mkdirSync(path.dirname(target), { recursive: true, mode: 0o700 });
      return fsp.open(target, 'wx', 0o600);
    });
    const hash = createHash('sha256');
    let size = 0;
    try {
      for await (const chunk of entry as AsyncIterable<Buffer>) {
        hash.update(chunk);
        size += chunk.length;
        onBytes(chunk.length);
        await writing(() => out.write(chunk));
      }
      // The caller renames it into place once all are read: on disk before that, not after.
      await writing(() => out.sync());
    } finally {
      await writing(() => out.close());
    }
    written.set(name, { path: name, size, sha256: hash.digest('hex') });
  };

  let stopped: () => void = () => undefined;
  const done = new Promise<void>((resolve) => {
    stopped = resolve;
  });
  const reading = new Set<ReadEntry>();
  const stop = (error: Error) => {
    failure ??= error;
    input.unpipe();
    input.destroy();
    // An entry cut off by a damaged archive never ends on its own.
    for (const entry of reading) entry.destroy(error);
    stopped();
  };
  parser.on('entry', (entry: ReadEntry) => {
    if (failure) {
      entry.resume();
      return;
    }
    reading.add(entry);
    entry.on('error', () => undefined); // `stop`'s: `failure` holds the cause
    work = work
      .then(() => (failure ? entry.resume() : handle(entry)))
      .catch((error: Error) => {
        entry.resume();
        stop(error); // nothing more needs reading
      })
      .finally(() => reading.delete(entry));
  });
  input.on('error', stop);
  parser.on('error', stop);
  parser.on('end', () => stopped());
  input.pipe(parser as unknown as NodeJS.WritableStream);
  await done;
  await work;

  const found = failure as Error | null;
  if (found) {
    if (found instanceof InvalidBackupError || found instanceof ExtractWriteError) throw found;
    if ((found as NodeJS.ErrnoException).syscall) throw found; // the file itself could not be read
    // Neither gzip nor tar: no backup. But a gzip stream that breaks off (`head -c 100`: zlib's
    // Z_BUF_ERROR) or is corrupt is a backup cut short or damaged, before its first member too.
    if (header === null && !isZlibError(found)) throw new InvalidBackupError('it is not a Drover coordinator backup');
    throw new InvalidBackupError(`it is damaged or truncated (${found.message})`);
  }
  if (header === null) throw new InvalidBackupError('it is not a Drover coordinator backup');
  if (manifest === null) throw new InvalidBackupError(`it is truncated: its ${MANIFEST_MEMBER} is missing`);
  verify(manifest, written);
  return { header, manifest };
}

/** What `dir` could not take, told apart from what the archive is (ExtractWriteError). */
async function writing<T>(write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (error) {
    throw new ExtractWriteError(error as NodeJS.ErrnoException);
  }
}

/** An error of the decompressor (tar passes zlib's on, codes `Z_DATA_ERROR`, `Z_BUF_ERROR`...). */
function isZlibError(error: Error): boolean {
  return /^Z_[A-Z_]+$/.test(String((error as NodeJS.ErrnoException).code));
}

function verify(manifest: Manifest, written: Map<string, ArchiveMember>): void {
  for (const member of manifest.members) {
    const got = written.get(member.path);
    if (!got) throw new InvalidBackupError(`it is damaged: ${member.path} is missing`);
    if (got.size !== member.size || got.sha256 !== member.sha256) {
      throw new InvalidBackupError(
        `it is damaged: ${member.path} is ${got.size} bytes with SHA-256 ${got.sha256}, its manifest says ${member.size} bytes with ${member.sha256}`,
      );
    }
  }
  const listed = new Set(manifest.members.map((m) => m.path));
  const extra = [...written.keys()].find((name) => !listed.has(name));
  if (extra !== undefined) throw new InvalidBackupError(`it is damaged: ${extra} is not in its manifest`);
}

async function text(entry: ReadEntry): Promise<string> {
  if (entry.size > MAX_JSON_BYTES) throw new InvalidBackupError(`its ${entry.path} is too large`);
  const chunks: Buffer[] = [];
  for await (const chunk of entry) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

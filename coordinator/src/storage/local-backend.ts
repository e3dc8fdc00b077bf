import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import type { Clock } from '../util/clock.js';
import {
  blobKeyOf,
  fileIdOfBlobKey,
  UploadChangedError,
  UploadTooLargeError,
  type BlobFile,
  type BlobStat,
  type StagedUpload,
  type DownloadTarget,
  type PresignedDownload,
  type PresignedUpload,
  type StorageBackend,
  type UploadTarget,
} from './backend.js';
import { BlobReader } from './blob-reader.js';
import { diskFull, writeBlob } from './blob-writer.js';

export { BlobTooLargeError } from './blob-writer.js';
import type { BlobMethod, BlobUrlSigner } from './blob-url.js';

/**
 * The `local` backend (docs/storage.md): blobs under `<dataDir>/blobs/<aa>/<fileId>`
 * (`aa`: the id's first two characters), each with a `<fileId>.meta` sidecar holding its size and
 * SHA-256. An upload never writes the blob: it goes to `<dataDir>/blobs/tmp/` first and, once
 * whole and synced to disk, is renamed to a staged upload of its own,
 * `<dataDir>/blobs/uploads/<aa>/<fileId>.<sequence>.<sha256>`: its hash, computed while it was
 * received, is part of its name, so one rename publishes the bytes and their hash together and
 * `complete` need not re-read gigabytes. `complete` renames the newest staged upload onto the blob
 * (promote) while the file is still pending, and removes the others; a PUT that finishes after
 * `complete` or a deletion only ever removes its own staged upload. An aborted or oversize upload
 * removes its temp file. The presigned URLs point back at this coordinator
 * (`/v1/storage/blobs/:fileId`, routes/storage-blobs.ts).
 */

const BLOB_KEY = /^[0-9a-f]{2}\/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** `<file id>.<sequence>.<sha256>`: a staged upload (the sequence orders them, newest last). */
const STAGED = /^([0-9a-f-]{36})\.(\d{20})\.([0-9a-f]{64})$/;
/** Staged uploads of this process get increasing sequences even within one millisecond. */
let sequence = 0;

export interface LocalBackendOptions {
  /** `<dataDir>/blobs` */
  root: string;
  signer: BlobUrlSigner;
  /** The coordinator's public URL (read at each presign: it is known only once listening). */
  publicUrl: () => string;
  clock: Clock;
}

export class LocalBackend implements StorageBackend {
  readonly kind = 'local' as const;
  /** A PUT comes through the coordinator, which discards it when the file no longer takes one. */
  readonly lateUploads = false;
  private readonly tmpDir: string;
  private readonly uploadsDir: string;
  /** Temp files being written by this process (the periodic cleanup leaves them alone). */
  private readonly writing = new Set<string>();

  constructor(private readonly options: LocalBackendOptions) {
    this.tmpDir = path.join(options.root, 'tmp');
    this.uploadsDir = path.join(options.root, 'uploads');
  }

  /** Creates the directories and removes temp files left by a previous process. */
  async init(): Promise<void> {
    await fsp.mkdir(this.tmpDir, { recursive: true, mode: 0o700 });
    await this.removeTemps(0);
  }

  blobKeyFor(fileId: string): string {
    return blobKeyOf(fileId);
  }

  async presignUpload(file: UploadTarget, expiresInSeconds: number): Promise<PresignedUpload> {
    return {
      url: this.url('PUT', file.id, expiresInSeconds),
      method: 'PUT',
      headers: { 'content-type': file.contentType },
    };
  }

  async presignDownload(file: DownloadTarget, expiresInSeconds: number): Promise<PresignedDownload> {
    return { url: this.url('GET', file.id, expiresInSeconds) };
  }

  /**
   * The blob's size and SHA-256 (its sidecar when it matches the blob's size, else hashed again),
   * or null when there is none. Only `complete` writes the blob, so the sidecar beside it is its own.
   */
  async stat(blobKey: string): Promise<BlobStat | null> {
    const file = this.pathOf(blobKey);
    let size: number;
    try {
      size = (await fsp.stat(file)).size;
    } catch (error) {
      if (isNotFound(error)) return null;
      throw error;
    }
    const meta = await readMeta(`${file}.meta`);
    if (meta && meta.size === size) return meta;
    // No sidecar (a crash between the rename and its writing) or a stale one: hash the blob again.
    return { size, sha256: await hashFile(file) };
  }

  /** A full or read-only disk is `complete`'s 503 (diskFull); the file stays pending. */
  async findUpload(file: BlobFile, maxBytes: number): Promise<StagedUpload | null> {
    try {
      return await this.newestUpload(file, maxBytes);
    } catch (error) {
      throw diskFull(error, 'complete') ?? error;
    }
  }

  private async newestUpload(file: BlobFile, maxBytes: number): Promise<StagedUpload | null> {
    const staged = await this.stagedUploads(file);
    let upload: StagedUpload | null = null;
    for (let i = staged.length - 1; i >= 0 && !upload; i--) {
      const name = staged[i]!;
      try {
        const size = (await fsp.stat(path.join(this.shardOf(file), name))).size;
        upload = { ref: name, size, sha256: STAGED.exec(name)![3]! };
      } catch (error) {
        // Removed meanwhile (a PUT discarding itself): the one before it.
        if (!isNotFound(error)) throw error;
      }
    }
    // None staged: a blob already in place (an upload made before uploads were staged).
    if (!upload) {
      const stat = await this.stat(file.blobKey);
      upload = stat && { ref: '', ...stat };
    }
    if (upload && upload.size > maxBytes) throw new UploadTooLargeError(upload.size, maxBytes);
    return upload;
  }

  async promote(file: BlobFile, upload: StagedUpload): Promise<void> {
    if (upload.ref === '') return;
    if (!STAGED.test(upload.ref) || !upload.ref.startsWith(`${file.id.toLowerCase()}.`)) {
      throw new Error(`not a staged upload of file ${file.id}: ${JSON.stringify(upload.ref)}`);
    }
    const target = this.pathOf(file.blobKey);
    try {
      await makeDir(path.dirname(target));
      // The old sidecar goes first: a crash after the rename leaves the blob without one (hashed
      // again by stat), never beside another upload's hash.
      await fsp.rm(`${target}.meta`, { force: true });
      try {
        await fsp.rename(path.join(this.shardOf(file), upload.ref), target);
      } catch (error) {
        if (isNotFound(error))
          throw new UploadChangedError('the upload was removed while the file was being completed');
        throw error;
      }
      // A sidecar that cannot be written leaves the blob without one: the next `complete` finds
      // the blob in place and hashes it again (stat).
      await writeMeta(`${target}.meta`, { size: upload.size, sha256: upload.sha256 });
    } catch (error) {
      // A full or read-only disk: 503, the file stays pending and `complete` can be called again.
      throw diskFull(error, 'complete') ?? error;
    }
  }

  async discardUploads(file: BlobFile): Promise<void> {
    const shard = this.shardOf(file);
    for (const name of await this.stagedUploads(file)) await fsp.rm(path.join(shard, name), { force: true });
  }

  /** Removes one staged upload (a PUT the file no longer takes). */
  async discardUpload(file: BlobFile, ref: string): Promise<void> {
    if (!STAGED.test(ref) || !ref.startsWith(`${file.id.toLowerCase()}.`)) return;
    await fsp.rm(path.join(this.shardOf(file), ref), { force: true });
  }

  async delete(blobKey: string): Promise<void> {
    const file = this.pathOf(blobKey);
    await fsp.rm(file, { force: true });
    await fsp.rm(`${file}.meta`, { force: true });
    await this.discardUploads({ id: fileIdOfBlobKey(blobKey), blobKey });
  }

  /**
   * Receives an upload: streams `source` to a temp file, counting and hashing on the way, refuses
   * it past `maxBytes`, syncs it to disk and renames it to a staged upload of its own (its hash in
   * its name); `upload` names it. Whatever goes wrong (too large, client gone, disk full), the
   * temp file is removed and the error rethrown. The file's blob is never touched.
   */
  async receive(blobKey: string, source: Readable, maxBytes: number): Promise<BlobStat & { upload: string }> {
    this.pathOf(blobKey); // checks the key
    const id = fileIdOfBlobKey(blobKey);
    const tmp = path.join(this.tmpDir, `${id}.${randomBytes(6).toString('hex')}.part`);
    this.writing.add(tmp);
    try {
      const file = await fsp.open(tmp, 'wx', 0o600);
      let stat: BlobStat;
      try {
        stat = await writeBlob(source, file, maxBytes);
      } finally {
        await file.close();
      }
      const shard = this.shardOf({ id, blobKey });
      await makeDir(shard);
      const upload = `${id}.${String(Date.now() * 1000 + (sequence++ % 1000)).padStart(20, '0')}.${stat.sha256}`;
      await fsp.rename(tmp, path.join(shard, upload));
      return { ...stat, upload };
    } catch (error) {
      await fsp.rm(tmp, { force: true }).catch(() => undefined);
      // No room for the temp file, its staged name or an inode: the same clear 503 as a write.
      throw diskFull(error) ?? error;
    } finally {
      this.writing.delete(tmp);
    }
  }

  /**
   * A reader of the blob's bytes `start` to `end` inclusive (the whole blob without a range), or
   * null when the blob is not on disk. The file is opened before answering, so a missing blob is
   * known before any header is sent.
   */
  async openRead(blobKey: string, range?: { start: number; end: number }): Promise<BlobReader | null> {
    let handle: fsp.FileHandle;
    try {
      handle = await fsp.open(this.pathOf(blobKey), 'r');
    } catch (error) {
      if (isNotFound(error)) return null;
      throw error;
    }
    if (range) return new BlobReader(handle, range.start, range.end);
    try {
      return new BlobReader(handle, 0, (await handle.stat()).size - 1);
    } catch (error) {
      await handle.close();
      throw error;
    }
  }

  /** Removes temp files older than `olderThanMs` that no upload of this process is writing. */
  async removeTemps(olderThanMs: number): Promise<number> {
    let names: string[];
    try {
      names = await fsp.readdir(this.tmpDir);
    } catch (error) {
      if (isNotFound(error)) return 0;
      throw error;
    }
    const cutoff = this.options.clock.now() - olderThanMs;
    let removed = 0;
    for (const name of names) {
      const file = path.join(this.tmpDir, name);
      if (!name.endsWith('.part') || this.writing.has(file)) continue;
      try {
        if (olderThanMs > 0 && (await fsp.stat(file)).mtimeMs > cutoff) continue;
        await fsp.rm(file, { force: true });
        removed++;
      } catch (error) {
        if (!isNotFound(error)) throw error;
      }
    }
    return removed;
  }

  private url(method: BlobMethod, fileId: string, expiresInSeconds: number): string {
    const exp = Math.floor(this.options.clock.now() / 1000) + expiresInSeconds;
    return `${this.options.publicUrl()}/v1/storage/blobs/${fileId}?${this.options.signer.query(method, fileId, exp)}`;
  }

  /** The staged uploads of the file, oldest first. */
  private async stagedUploads(file: BlobFile): Promise<string[]> {
    let names: string[];
    try {
      names = await fsp.readdir(this.shardOf(file));
    } catch (error) {
      if (isNotFound(error)) return [];
      throw error;
    }
    const prefix = `${file.id.toLowerCase()}.`;
    return names.filter((n) => n.startsWith(prefix) && STAGED.test(n)).sort();
  }

  /** `<root>/uploads/<aa>`, where the file's staged uploads are. */
  private shardOf(file: BlobFile): string {
    return path.join(this.uploadsDir, path.dirname(this.pathOf(file.blobKey)).slice(-2));
  }

  /** The blob's path; the key is checked so that no key can point outside the blob directory. */
  private pathOf(blobKey: string): string {
    if (!BLOB_KEY.test(blobKey)) throw new Error(`not a local blob key: ${JSON.stringify(blobKey)}`);
    return path.join(this.options.root, blobKey);
  }
}

/**
 * `mkdir -p` with the true error: Node's recursive mkdir says ENOENT for a directory it could
 * not make on a read-only file system, which would hide the EROFS that `diskFull` answers 503.
 */
async function makeDir(dir: string): Promise<void> {
  try {
    await fsp.mkdir(dir, { recursive: true, mode: 0o700 });
  } catch (error) {
    if (!isNotFound(error)) throw error;
    // One level at a time, each failing with its own error.
    const parent = path.dirname(dir);
    if (parent !== dir) await makeDir(parent);
    try {
      await fsp.mkdir(dir, { mode: 0o700 });
    } catch (again) {
      if ((again as NodeJS.ErrnoException | null)?.code !== 'EEXIST') throw again;
    }
  }
}

async function readMeta(file: string): Promise<BlobStat | null> {
  try {
    const meta = JSON.parse(await fsp.readFile(file, 'utf8')) as Partial<BlobStat>;
    if (typeof meta.size === 'number' && typeof meta.sha256 === 'string' && /^[0-9a-f]{64}$/.test(meta.sha256)) {
      return { size: meta.size, sha256: meta.sha256 };
    }
    return null;
  } catch (error) {
    if (isNotFound(error) || error instanceof SyntaxError) return null;
    throw error;
  }
}

async function writeMeta(file: string, stat: BlobStat): Promise<void> {
  const tmp = `${file}.${randomBytes(4).toString('hex')}.tmp`;
  try {
    await fsp.writeFile(tmp, JSON.stringify(stat), { mode: 0o600 });
    await fsp.rename(tmp, file);
  } catch (error) {
    // A full disk may have left part of it: nothing else would ever remove it.
    await fsp.rm(tmp, { force: true }).catch(() => undefined);
    throw error;
  }
}

async function hashFile(file: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of fs.createReadStream(file, { highWaterMark: 1 << 20 })) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

function isNotFound(error: unknown): boolean {
  return (error as NodeJS.ErrnoException | null)?.code === 'ENOENT';
}

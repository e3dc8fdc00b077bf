import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import type { Clock } from '../util/clock.js';
import {
  blobKeyOf,
  type BlobStat,
  type DownloadTarget,
  type PresignedDownload,
  type PresignedUpload,
  type StorageBackend,
  type UploadTarget,
} from './backend.js';
import { BlobReader } from './blob-reader.js';
import { writeBlob } from './blob-writer.js';

export { BlobTooLargeError } from './blob-writer.js';
import type { BlobMethod, BlobUrlSigner } from './blob-url.js';

/**
 * The `local` backend (docs/storage.md): blobs under `<dataDir>/blobs/<aa>/<fileId>`
 * (`aa`: the id's first two characters), each with a `<fileId>.meta` sidecar holding its size and
 * SHA-256, computed while it was received, so `complete` need not re-read gigabytes. Uploads go to
 * `<dataDir>/blobs/tmp/` first and are renamed into place only once whole and synced to disk; an
 * aborted or oversize upload removes its temp file. The presigned URLs point back at this
 * coordinator (`/v1/storage/blobs/:fileId`, routes/storage-blobs.ts).
 */

const BLOB_KEY = /^[0-9a-f]{2}\/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

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
  private readonly tmpDir: string;
  /** Temp files being written by this process (the periodic cleanup leaves them alone). */
  private readonly writing = new Set<string>();

  constructor(private readonly options: LocalBackendOptions) {
    this.tmpDir = path.join(options.root, 'tmp');
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
    // No sidecar (a crash between the two renames) or a stale one: hash the blob again.
    return { size, sha256: await hashFile(file) };
  }

  async delete(blobKey: string): Promise<void> {
    const file = this.pathOf(blobKey);
    await fsp.rm(file, { force: true });
    await fsp.rm(`${file}.meta`, { force: true });
  }

  /**
   * Receives a blob: streams `source` to a temp file, counting and hashing on the way, refuses it
   * past `maxBytes`, syncs it to disk and renames it (then its sidecar) into place. Whatever goes
   * wrong (too large, client gone, disk full), the temp file is removed and the error rethrown.
   */
  async receive(blobKey: string, source: Readable, maxBytes: number): Promise<BlobStat> {
    const target = this.pathOf(blobKey);
    const tmp = path.join(this.tmpDir, `${path.basename(target)}.${randomBytes(6).toString('hex')}.part`);
    this.writing.add(tmp);
    try {
      const file = await fsp.open(tmp, 'wx', 0o600);
      let stat: BlobStat;
      try {
        stat = await writeBlob(source, file, maxBytes);
      } finally {
        await file.close();
      }
      await fsp.mkdir(path.dirname(target), { recursive: true, mode: 0o700 });
      await fsp.rename(tmp, target);
      await writeMeta(`${target}.meta`, stat);
      return stat;
    } catch (error) {
      await fsp.rm(tmp, { force: true }).catch(() => undefined);
      throw error;
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

  /** The blob's path; the key is checked so that no key can point outside the blob directory. */
  private pathOf(blobKey: string): string {
    if (!BLOB_KEY.test(blobKey)) throw new Error(`not a local blob key: ${JSON.stringify(blobKey)}`);
    return path.join(this.options.root, blobKey);
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
  await fsp.writeFile(tmp, JSON.stringify(stat), { mode: 0o600 });
  await fsp.rename(tmp, file);
}

async function hashFile(file: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of fs.createReadStream(file, { highWaterMark: 1 << 20 })) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

function isNotFound(error: unknown): boolean {
  return (error as NodeJS.ErrnoException | null)?.code === 'ENOENT';
}

import { createHash } from 'node:crypto';
import { once } from 'node:events';
import type { FileHandle } from 'node:fs/promises';
import { Writable } from 'node:stream';
import zlib from 'node:zlib';
import { Header } from 'tar';
import type { ArchiveMember } from './archive-format.js';

const BLOCK = 512;
const CHUNK = 1024 * 1024;

/**
 * Writes a gzipped tar archive member by member to an open file. The tar headers are encoded by
 * `tar` (isaacs), so any tar reader (`tar -tzf`) lists the archive; the bytes of each member are
 * counted and hashed on their way in, so the manifest names what was written, not what was read
 * before. `fileMember` copies from an open file handle: a file removed after it was opened is
 * still read whole.
 */
export class ArchiveWriter {
  private readonly gzip: zlib.Gzip;
  private readonly file: Writable;
  private readonly flushed: Promise<void>;
  /** Rejects with the first error of either stream. */
  private readonly failed: Promise<never>;
  private failure: Error | null = null;

  constructor(
    /** The archive's file; a stream instead in tests (one that fails as a full disk does). */
    out: FileHandle | Writable,
    // Level 1: a database compresses 3.4 times at 158 MiB/s, level 6 only 5 % smaller at a third of the speed.
    level = zlib.constants.Z_BEST_SPEED,
  ) {
    this.gzip = zlib.createGzip({ level });
    // The stream owns the handle: it syncs it to disk (`flush`) and closes it once ended.
    const file = out instanceof Writable ? out : out.createWriteStream({ flush: true, highWaterMark: CHUNK });
    this.file = file;
    this.gzip.pipe(file);
    this.failed = new Promise((_resolve, reject) => {
      const fail = (error: Error) => {
        this.failure ??= error;
        reject(this.failure);
      };
      this.gzip.on('error', fail);
      file.on('error', fail);
    });
    this.failed.catch(() => undefined); // awaited by `drained`
    this.flushed = new Promise((resolve, reject) => {
      file.on('close', resolve);
      file.on('error', reject);
      this.gzip.on('error', reject);
    });
    // Awaited by `finish`; a failure before that is thrown by the next write.
    this.flushed.catch(() => undefined);
  }

  /** A member whose content is in memory (the header, the keys, the manifest). */
  async bufferMember(path: string, data: Buffer, mtime: Date): Promise<ArchiveMember> {
    await this.header(path, data.length, mtime);
    await this.write(data);
    await this.pad(data.length);
    return { path, size: data.length, sha256: createHash('sha256').update(data).digest('hex') };
  }

  /**
   * A member copied from an open file: `size` bytes (its size when opened). A file that comes out
   * shorter throws (the archive is then abandoned).
   */
  async fileMember(
    path: string,
    handle: FileHandle,
    size: number,
    mtime: Date,
    onBytes: (n: number) => void = () => undefined,
  ): Promise<ArchiveMember> {
    await this.header(path, size, mtime);
    const hash = createHash('sha256');
    const buffer = Buffer.alloc(Math.min(CHUNK, Math.max(size, 1)));
    let done = 0;
    while (done < size) {
      const { bytesRead } = await handle.read(buffer, 0, Math.min(buffer.length, size - done), done);
      if (bytesRead === 0) throw new Error(`${path} ended after ${done} of ${size} bytes while it was read`);
      // The writes are awaited one by one: a copy of the chunk is not needed.
      const chunk = buffer.subarray(0, bytesRead);
      hash.update(chunk);
      await this.write(Buffer.from(chunk));
      done += bytesRead;
      onBytes(bytesRead);
    }
    await this.pad(size);
    return { path, size, sha256: hash.digest('hex') };
  }

  /** Ends the archive (two zero blocks), flushes the compressor, syncs the file to disk and closes it. */
  async finish(): Promise<void> {
    await this.write(Buffer.alloc(2 * BLOCK));
    this.gzip.end();
    await this.flushed;
  }

  /** Stops writing after a failure and closes the file (the caller removes it). */
  async abandon(): Promise<void> {
    this.gzip.destroy();
    if (this.file.closed) return;
    const closed = new Promise<void>((resolve) => this.file.once('close', () => resolve()));
    this.file.destroy();
    await closed;
  }

  private async header(path: string, size: number, mtime: Date): Promise<void> {
    const header = new Header({ path, mode: 0o600, size, mtime, type: 'File', uid: 0, gid: 0 });
    header.encode();
    await this.write(header.block!);
  }

  private async pad(size: number): Promise<void> {
    const rest = size % BLOCK;
    if (rest > 0) await this.write(Buffer.alloc(BLOCK - rest));
  }

  private async write(data: Buffer): Promise<void> {
    if (this.failure) throw this.failure;
    if (!this.gzip.write(data)) await this.drained();
    if (this.failure) throw this.failure;
  }

  /**
   * Until the compressor takes more, or the first error of either stream. Waiting for the
   * compressor's own `error` is not enough: when the file fails (ENOSPC), `pipe` unplugs the
   * compressor from it, and the compressor, its output unread, then neither drains nor fails.
   */
  private async drained(): Promise<void> {
    const controller = new AbortController();
    try {
      await Promise.race([once(this.gzip, 'drain', { signal: controller.signal }), this.failed]);
    } finally {
      controller.abort(); // the `drain` listener, when the failure came first
    }
  }
}

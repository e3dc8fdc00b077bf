import { createHash } from 'node:crypto';
import type fsp from 'node:fs/promises';
import type { Readable } from 'node:stream';
import type { BlobStat } from './backend.js';

/** Size of each of the two write buffers. */
const BUFFER_BYTES = 1024 * 1024;
/** Written bytes between two background flushes to disk. */
const FLUSH_EVERY_BYTES = 64 * 1024 * 1024;

/** The upload passed the size limit; nothing was kept. */
export class BlobTooLargeError extends Error {
  constructor(readonly maxBytes: number) {
    super(`the upload is larger than ${maxBytes} bytes`);
    this.name = 'BlobTooLargeError';
  }
}

/**
 * Copies an upload into an open file, measuring and hashing it on the way, and syncs the file.
 * The socket delivers 64 KiB chunks; they are gathered into two reused 1 MiB buffers, one filled
 * while the other is written, so a gigabyte costs a thousand file writes instead of sixteen
 * thousand and no stream machinery per chunk (docs/performance.md, "File transfer"). Reading stops
 * while a write is pending, which holds the sender back. Every 64 MiB a flush to disk (fdatasync
 * on libuv's thread pool) starts in the background, at most one at a time, so the disk writes
 * while the upload goes on and the final sync has little left to do: a gigabyte is no longer
 * written out in one go after its last byte arrived. Throws `BlobTooLargeError` as soon as the
 * bytes pass `maxBytes`, and the source's error when the upload is aborted; the caller removes
 * the file then.
 */
export async function writeBlob(source: Readable, file: fsp.FileHandle, maxBytes: number): Promise<BlobStat> {
  const hash = createHash('sha256');
  const buffers = [Buffer.allocUnsafe(BUFFER_BYTES), Buffer.allocUnsafe(BUFFER_BYTES)] as const;
  let current = 0;
  let filled = 0;
  let size = 0;
  let writing: Promise<void> = Promise.resolve();
  let unflushed = 0;
  // The background flush in flight, and the first error of one (set from its callbacks).
  const flush: { pending: Promise<void> | null; error: unknown } = { pending: null, error: null };

  // Starts writing the filled buffer (after the previous write finished) and switches buffers;
  // starts a background flush every FLUSH_EVERY_BYTES.
  const writeFilled = async (): Promise<void> => {
    if (flush.error) throw flush.error;
    const buffer = buffers[current]!;
    const length = filled;
    await writing;
    writing = writeAll(file, buffer, length);
    current ^= 1;
    filled = 0;
    unflushed += length;
    if (unflushed >= FLUSH_EVERY_BYTES && flush.pending === null) {
      unflushed = 0;
      flush.pending = writing
        .then(() => file.datasync())
        .catch((error: unknown) => {
          flush.error ??= error;
        })
        .finally(() => {
          flush.pending = null;
        });
    }
  };

  try {
    for await (const chunk of source as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > maxBytes) throw new BlobTooLargeError(maxBytes);
      hash.update(chunk);
      let offset = 0;
      while (offset < chunk.length) {
        const copied = chunk.copy(buffers[current]!, filled, offset);
        filled += copied;
        offset += copied;
        if (filled === BUFFER_BYTES) await writeFilled();
      }
    }
    if (filled > 0) await writeFilled();
    await writing;
    await flush.pending;
    if (flush.error) throw flush.error;
    await file.sync();
  } catch (error) {
    // Let a pending write and flush settle before the caller closes and removes the file.
    await writing.catch(() => undefined);
    await flush.pending;
    throw error;
  }
  return { size, sha256: hash.digest('hex') };
}

async function writeAll(file: fsp.FileHandle, buffer: Buffer, length: number): Promise<void> {
  let written = 0;
  while (written < length) {
    const { bytesWritten } = await file.write(buffer, written, length - written);
    written += bytesWritten;
  }
}

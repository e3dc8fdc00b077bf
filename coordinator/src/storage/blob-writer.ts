import { createHash } from 'node:crypto';
import type fsp from 'node:fs/promises';
import type { Readable } from 'node:stream';
import type { BlobStat } from './backend.js';

/** Size of each of the two write buffers. */
const BUFFER_BYTES = 1024 * 1024;

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
 * while a write is pending, which holds the sender back. Throws `BlobTooLargeError` as soon as
 * the bytes pass `maxBytes`, and the source's error when the upload is aborted; the caller removes
 * the file then.
 */
export async function writeBlob(source: Readable, file: fsp.FileHandle, maxBytes: number): Promise<BlobStat> {
  const hash = createHash('sha256');
  const buffers = [Buffer.allocUnsafe(BUFFER_BYTES), Buffer.allocUnsafe(BUFFER_BYTES)] as const;
  let current = 0;
  let filled = 0;
  let size = 0;
  let writing: Promise<void> = Promise.resolve();

  // Starts writing the filled buffer (after the previous write finished) and switches buffers.
  const writeFilled = async (): Promise<void> => {
    const buffer = buffers[current]!;
    const length = filled;
    await writing;
    writing = writeAll(file, buffer, length);
    current ^= 1;
    filled = 0;
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
    await file.sync();
  } catch (error) {
    // Let a pending write settle before the caller closes and removes the file.
    await writing.catch(() => undefined);
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

import { createHash } from 'node:crypto';
import type fsp from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { AppError } from '../errors.js';
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
 * bytes pass `maxBytes`, the source's error when the upload is aborted, and a write's or a sync's
 * error once it happened (the reading stops at the next chunk), a full disk's as the
 * `storage_unavailable` AppError of `diskFull` (a read-only one's too); the caller removes the file then.
 */
export async function writeBlob(source: Readable, file: fsp.FileHandle, maxBytes: number): Promise<BlobStat> {
  const hash = createHash('sha256');
  const buffers = [Buffer.allocUnsafe(BUFFER_BYTES), Buffer.allocUnsafe(BUFFER_BYTES)] as const;
  let current = 0;
  let filled = 0;
  let size = 0;
  let unflushed = 0;
  // The write and the background flush in flight, and the first error of either. Each promise
  // handles its own rejection where it is made, recording the error here: a write that fails
  // while the loop waits for the socket's next chunk must not be an unhandled rejection (one
  // ends the process, server.ts). The loop checks `failed` at every chunk.
  const state: { writing: Promise<void>; flushing: Promise<void> | null; failed: { error: unknown } | null } = {
    writing: Promise.resolve(),
    flushing: null,
    failed: null,
  };
  const fail = (error: unknown): void => {
    state.failed ??= { error };
  };
  const throwIfFailed = (): void => {
    if (state.failed) throw state.failed.error;
  };

  // Starts writing the filled buffer (after the previous write finished) and switches buffers;
  // starts a background flush every FLUSH_EVERY_BYTES.
  const writeFilled = async (): Promise<void> => {
    throwIfFailed();
    const buffer = buffers[current]!;
    const length = filled;
    await state.writing;
    throwIfFailed();
    const write = writeAll(file, buffer, length);
    state.writing = write.catch(fail);
    current ^= 1;
    filled = 0;
    unflushed += length;
    if (unflushed >= FLUSH_EVERY_BYTES && state.flushing === null) {
      unflushed = 0;
      state.flushing = write
        .then(() => file.datasync())
        .catch(fail)
        .finally(() => {
          state.flushing = null;
        });
    }
  };

  try {
    for await (const chunk of source as AsyncIterable<Buffer>) {
      // A failed write stops the reading (leaving the loop ends the source) at the next chunk.
      throwIfFailed();
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
    await state.writing;
    await state.flushing;
    throwIfFailed();
    await file.sync();
  } catch (error) {
    // Let a pending write and flush settle before the caller closes and removes the file (neither
    // rejects: their errors are recorded). A full disk is said plainly, whichever call met it.
    await state.writing;
    await state.flushing;
    throw diskFull(error) ?? error;
  }
  return { size, sha256: hash.digest('hex') };
}

/** `Retry-After` of a full disk: space comes back when someone frees it, not in a few seconds. */
const DISK_FULL_RETRY_AFTER_SECONDS = 60;

/** The errors of a file system with no room left: no space, or the user's quota spent. */
const NO_ROOM: ReadonlyMap<unknown, string> = new Map([
  ['ENOSPC', "The coordinator's disk is full (ENOSPC)"],
  ['EDQUOT', "The coordinator's disk quota is used up (EDQUOT)"],
]);

/**
 * The errors of a data directory that takes no writes at all: a file system mounted (or, after
 * errors, remounted) read-only, or a directory the coordinator's user may not write to. Like a
 * full disk, they last until the operator acts, and the coordinator goes on serving meanwhile.
 */
const NOT_WRITABLE: ReadonlyMap<unknown, string> = new Map([
  ['EROFS', "The coordinator's data directory is on a read-only file system (EROFS)"],
  ['EACCES', 'The coordinator may not write to its data directory (EACCES)'],
  ['EPERM', 'The coordinator may not write to its data directory (EPERM)'],
]);

/** What became of the call that met the disk's error: an upload, or a `complete`. */
export type DiskStep = 'upload' | 'complete';

/**
 * A 503 `storage_unavailable` for an error of a full disk (ENOSPC, EDQUOT) or of a data directory
 * that cannot be written (EROFS, EACCES, EPERM), or null for any other: nothing was kept (the
 * caller removes the temp file), the file stays pending, and the call may succeed once the
 * operator has freed space or made the directory writable. The system error is the cause, for
 * the log; the answer says no path.
 */
export function diskFull(error: unknown, step: DiskStep = 'upload'): AppError | null {
  const code = (error as { code?: unknown } | null | undefined)?.code;
  const full = NO_ROOM.get(code);
  const what = full ?? NOT_WRITABLE.get(code);
  if (what === undefined) return null;
  const fix = full !== undefined ? 'freed space' : 'made the data directory writable';
  const outcome =
    step === 'upload'
      ? `the upload was not kept; try again once its operator has ${fix}`
      : `the file stays pending; complete it again once its operator has ${fix}`;
  return new AppError('storage_unavailable', `${what}: ${outcome}`, {
    cause: error,
    retryAfter: DISK_FULL_RETRY_AFTER_SECONDS,
  });
}

async function writeAll(file: fsp.FileHandle, buffer: Buffer, length: number): Promise<void> {
  let written = 0;
  while (written < length) {
    const { bytesWritten } = await file.write(buffer, written, length - written);
    written += bytesWritten;
  }
}

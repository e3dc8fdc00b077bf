import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { AppError } from '../../src/errors.js';
import { BlobTooLargeError, diskFull, writeBlob } from '../../src/storage/blob-writer.js';
import { BlobUrlSigner } from '../../src/storage/blob-url.js';
import { LocalBackend } from '../../src/storage/local-backend.js';

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'drover-blob-writer-'));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

async function write(chunks: Buffer[], maxBytes = Number.MAX_SAFE_INTEGER) {
  const file = path.join(dir, 'blob');
  const handle = await fsp.open(file, 'wx');
  try {
    return { stat: await writeBlob(Readable.from(chunks), handle, maxBytes), file };
  } finally {
    await handle.close();
  }
}

const sha256 = (data: Buffer) => createHash('sha256').update(data).digest('hex');

describe('writeBlob', () => {
  it('writes every byte in order across buffer boundaries, with its size and SHA-256', async () => {
    const MiB = 1024 * 1024;
    // Chunks smaller than, equal to and larger than the 1 MiB buffers, ending mid-buffer.
    const chunks = [
      randomBytes(65_536),
      randomBytes(MiB),
      randomBytes(3 * MiB + 17),
      randomBytes(1),
      randomBytes(MiB - 1),
    ];
    const all = Buffer.concat(chunks);
    const { stat, file } = await write(chunks);
    expect(stat).toEqual({ size: all.length, sha256: sha256(all) });
    expect(fs.readFileSync(file).equals(all)).toBe(true);
  });

  it('handles an empty upload', async () => {
    const { stat, file } = await write([]);
    expect(stat).toEqual({ size: 0, sha256: sha256(Buffer.alloc(0)) });
    expect(fs.statSync(file).size).toBe(0);
  });

  it('stops with BlobTooLargeError as soon as the bytes pass the limit', async () => {
    await expect(write([randomBytes(600), randomBytes(600)], 1000)).rejects.toBeInstanceOf(BlobTooLargeError);
  });

  it('rethrows the source error of an aborted upload', async () => {
    const file = path.join(dir, 'aborted');
    const handle = await fsp.open(file, 'wx');
    const source = new Readable({ read() {} });
    source.push(randomBytes(2 * 1024 * 1024));
    setImmediate(() => source.destroy(new Error('aborted by the client')));
    await expect(writeBlob(source, handle, Number.MAX_SAFE_INTEGER)).rejects.toThrow('aborted by the client');
    await handle.close();
  });

  it('flushes to disk in the background every 64 MiB, then syncs once at the end', async () => {
    const file = path.join(dir, 'large');
    const handle = await fsp.open(file, 'wx');
    const datasync = vi.spyOn(handle, 'datasync');
    const sync = vi.spyOn(handle, 'sync');
    const block = randomBytes(1024 * 1024);
    // 200 MiB: flushes start after 64 and 128 MiB of writes (at most one at a time), maybe 192.
    const stat = await writeBlob(
      Readable.from(Array.from({ length: 200 }, () => block)),
      handle,
      Number.MAX_SAFE_INTEGER,
    );
    await handle.close();
    expect(stat.size).toBe(200 * 1024 * 1024);
    expect(datasync.mock.calls.length).toBeGreaterThanOrEqual(2);
    expect(datasync.mock.calls.length).toBeLessThanOrEqual(3);
    expect(sync).toHaveBeenCalledTimes(1);
    expect(fs.statSync(file).size).toBe(200 * 1024 * 1024);
  });

  it('fails the upload when a background flush fails, without the final sync', async () => {
    const file = path.join(dir, 'flush-fails');
    const handle = await fsp.open(file, 'wx');
    vi.spyOn(handle, 'datasync').mockRejectedValue(
      Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' }),
    );
    const sync = vi.spyOn(handle, 'sync');
    const block = randomBytes(1024 * 1024);
    await expect(
      writeBlob(Readable.from(Array.from({ length: 80 }, () => block)), handle, Number.MAX_SAFE_INTEGER),
    ).rejects.toThrow('EIO');
    expect(sync).not.toHaveBeenCalled();
    await handle.close();
  });
});

const systemError = (code: string, syscall = 'write') =>
  Object.assign(new Error(`${code}: error, ${syscall}`), { code, syscall, errno: -28 });

describe('writeBlob on a full disk', () => {
  // Vitest fails a run on an unhandled rejection too; these tests also say so themselves.
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => unhandled.push(reason);
  beforeEach(() => {
    unhandled.length = 0;
    process.on('unhandledRejection', onUnhandled);
  });
  afterEach(() => {
    process.off('unhandledRejection', onUnhandled);
  });
  /** Lets pending callbacks and rejections run, so that an unhandled one would be reported. */
  const settle = () => new Promise((resolve) => setTimeout(resolve, 20));

  it('stops at a write that fails while it waits for the next chunk: no unhandled rejection, a clear 503', async () => {
    const handle = await fsp.open(path.join(dir, 'full'), 'wx');
    const write = vi.spyOn(handle, 'write').mockRejectedValue(systemError('ENOSPC'));
    const source = new Readable({ read() {} });
    const result = writeBlob(source, handle, Number.MAX_SAFE_INTEGER).then(
      () => null,
      (error: unknown) => error,
    );
    // One whole buffer: its write starts, and fails while no further chunk comes.
    source.push(randomBytes(1024 * 1024));
    await vi.waitFor(() => expect(write).toHaveBeenCalledTimes(1));
    await settle();
    expect(unhandled).toEqual([]);
    // The next chunk finds the failure: the reading stops there, the source is let go.
    source.push(randomBytes(64 * 1024));
    const error = (await result) as AppError;
    expect(error).toBeInstanceOf(AppError);
    expect(error).toMatchObject({ statusCode: 503, code: 'storage_unavailable', retryAfter: 60 });
    expect(error.message).toBe(
      "The coordinator's disk is full (ENOSPC): the upload was not kept; try again once its operator has freed space",
    );
    expect((error.cause as { code: string }).code).toBe('ENOSPC');
    expect(source.destroyed).toBe(true);
    expect(write).toHaveBeenCalledTimes(1);
    await settle();
    expect(unhandled).toEqual([]);
    await handle.close();
  });

  it('reports a write that fails under the last chunks, and never syncs', async () => {
    const handle = await fsp.open(path.join(dir, 'full'), 'wx');
    vi.spyOn(handle, 'write').mockRejectedValue(systemError('EDQUOT'));
    const sync = vi.spyOn(handle, 'sync');
    await expect(writeBlob(Readable.from([randomBytes(1000)]), handle, Number.MAX_SAFE_INTEGER)).rejects.toMatchObject({
      statusCode: 503,
      code: 'storage_unavailable',
      message: expect.stringMatching(/^The coordinator's disk quota is used up \(EDQUOT\): the upload was not kept/),
    });
    expect(sync).not.toHaveBeenCalled();
    await settle();
    expect(unhandled).toEqual([]);
    await handle.close();
  });

  it('says so of a full disk found by a background flush or the final sync too', async () => {
    const handle = await fsp.open(path.join(dir, 'sync'), 'wx');
    vi.spyOn(handle, 'sync').mockRejectedValue(systemError('ENOSPC', 'fsync'));
    await expect(writeBlob(Readable.from([randomBytes(10)]), handle, 100)).rejects.toMatchObject({
      code: 'storage_unavailable',
    });
    await handle.close();
  });

  it('passes any other write error through unchanged', async () => {
    const handle = await fsp.open(path.join(dir, 'eio'), 'wx');
    const eio = systemError('EIO');
    vi.spyOn(handle, 'write').mockRejectedValue(eio);
    await expect(
      writeBlob(Readable.from([randomBytes(3 * 1024 * 1024)]), handle, Number.MAX_SAFE_INTEGER),
    ).rejects.toBe(eio);
    await settle();
    expect(unhandled).toEqual([]);
    await handle.close();
  });

  it.runIf(process.platform === 'linux' && fs.existsSync('/dev/full'))(
    "answers the kernel's own ENOSPC (/dev/full) with the 503",
    async () => {
      const handle = await fsp.open('/dev/full', 'w');
      try {
        const source = Readable.from(Array.from({ length: 8 }, () => randomBytes(512 * 1024)));
        await expect(writeBlob(source, handle, Number.MAX_SAFE_INTEGER)).rejects.toMatchObject({
          statusCode: 503,
          code: 'storage_unavailable',
          cause: expect.objectContaining({ code: 'ENOSPC', syscall: 'write' }),
        });
      } finally {
        await handle.close();
      }
      await settle();
      expect(unhandled).toEqual([]);
    },
  );

  it('maps only the errors of a full disk or of one that cannot be written', () => {
    expect(diskFull(systemError('ENOSPC'))?.code).toBe('storage_unavailable');
    expect(diskFull(systemError('EDQUOT'))?.code).toBe('storage_unavailable');
    for (const code of ['EROFS', 'EACCES', 'EPERM']) {
      const error = diskFull(systemError(code));
      expect(error).toMatchObject({ statusCode: 503, code: 'storage_unavailable', retryAfter: 60 });
      expect(error?.message).toContain(`(${code}): the upload was not kept`);
    }
    expect(diskFull(systemError('EROFS'), 'complete')?.message).toBe(
      "The coordinator's data directory is on a read-only file system (EROFS): the file stays pending; complete it again once its operator has made the data directory writable",
    );
    expect(diskFull(systemError('ENOSPC'), 'complete')?.message).toBe(
      "The coordinator's disk is full (ENOSPC): the file stays pending; complete it again once its operator has freed space",
    );
    for (const other of [systemError('EIO'), systemError('constructor'), new Error('x'), null, undefined, 'ENOSPC']) {
      expect(diskFull(other)).toBeNull();
    }
  });
});

describe('LocalBackend.receive on a full disk', () => {
  it('removes the temp file, keeps nothing and rejects with the 503', async () => {
    const root = path.join(dir, 'blobs');
    const backend = new LocalBackend({
      root,
      signer: new BlobUrlSigner(randomBytes(32)),
      publicUrl: () => 'https://files.example.test',
      clock: { now: () => Date.now() },
    });
    await backend.init();
    // The temp file is made for real; its second write finds the disk full.
    const open = fsp.open.bind(fsp);
    const opened = vi.spyOn(fsp, 'open').mockImplementationOnce(async (...args: Parameters<typeof fsp.open>) => {
      const handle = await open(...args);
      const write = handle.write.bind(handle) as (...a: unknown[]) => Promise<unknown>;
      let writes = 0;
      vi.spyOn(handle, 'write').mockImplementation(((...a: unknown[]) =>
        ++writes === 1 ? write(...a) : Promise.reject(systemError('ENOSPC'))) as typeof handle.write);
      return handle;
    });
    const key = '3b/3b2c9a44-1f0e-4d55-9a8e-0c2f6b1d7e90';
    const source = Readable.from(Array.from({ length: 6 }, () => randomBytes(1024 * 1024)));
    await expect(backend.receive(key, source, Number.MAX_SAFE_INTEGER)).rejects.toMatchObject({
      statusCode: 503,
      code: 'storage_unavailable',
    });
    expect(opened).toHaveBeenCalled();
    opened.mockRestore();
    const left = (fs.readdirSync(root, { recursive: true }) as string[]).filter((p) =>
      fs.statSync(path.join(root, p)).isFile(),
    );
    expect(left).toEqual([]);
    expect(await backend.stat(key)).toBeNull();
  });
});

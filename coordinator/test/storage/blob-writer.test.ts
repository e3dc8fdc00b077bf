import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { BlobTooLargeError, writeBlob } from '../../src/storage/blob-writer.js';

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

import { EventEmitter } from 'node:events';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BlobReader, type BlobSink } from '../../src/storage/blob-reader.js';
import { eventually } from '../../../test/helpers/poll.js';

/** A client that takes `accept` chunks, then goes away: later writes fail as a destroyed response's do. */
class LeavingClient extends EventEmitter implements BlobSink {
  destroyed = false;
  received = 0;
  /** Write callbacks not called yet. */
  pending = 0;
  constructor(private accept: number) {
    super();
  }
  write(chunk: Buffer, done: (error?: Error | null) => void): boolean {
    this.pending += 1;
    const callback = (error?: Error) => {
      this.pending -= 1;
      done(error);
    };
    if (this.destroyed) {
      process.nextTick(
        callback,
        Object.assign(new Error('Cannot call write after a stream was destroyed'), { code: 'ERR_STREAM_DESTROYED' }),
      );
      return false;
    }
    this.received += chunk.length;
    if (--this.accept === 0) {
      // Gone while this chunk is on its way: its callback fails, then the connection closes.
      this.destroyed = true;
      process.nextTick(callback, new Error('socket hang up'));
      setImmediate(() => this.emit('close'));
      return false;
    }
    process.nextTick(callback);
    return true;
  }
  end(callback?: () => void): void {
    callback?.();
  }
}

describe('BlobReader', () => {
  let dir: string;
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('rejects when the client goes away mid-transfer, leaving no unhandled rejection behind', async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'drover-blob-reader-'));
    const file = path.join(dir, 'blob');
    fs.writeFileSync(file, Buffer.alloc(5 * 1024 * 1024, 1));
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      const client = new LeavingClient(2);
      const reader = new BlobReader(await fsp.open(file, 'r'), 0, 5 * 1024 * 1024 - 1);
      await expect(reader.writeTo(client)).rejects.toThrow();
      // Every write callback has been called, and the turn of the event loop that reports the
      // rejections left unhandled by them is over.
      await eventually(() => client.pending === 0, 5000, 'every write callback');
      await new Promise((resolve) => setImmediate(resolve));
      expect(unhandled).toEqual([]);
      expect(reader.sent).toBeLessThan(5 * 1024 * 1024);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });

  it('sends the whole range and counts it', async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'drover-blob-reader-'));
    const file = path.join(dir, 'blob');
    fs.writeFileSync(file, Buffer.alloc(3 * 1024 * 1024 + 7, 2));
    const client = new LeavingClient(Number.POSITIVE_INFINITY);
    const reader = new BlobReader(await fsp.open(file, 'r'), 10, 3 * 1024 * 1024 + 6);
    await reader.writeTo(client);
    expect(client.received).toBe(3 * 1024 * 1024 - 3);
    expect(reader.sent).toBe(3 * 1024 * 1024 - 3);
  });

  it('rejects and closes the file when the client stops taking data (stallMs)', async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'drover-blob-reader-'));
    const file = path.join(dir, 'blob');
    fs.writeFileSync(file, Buffer.alloc(3 * 1024 * 1024, 3));
    // Takes the first chunk, then none: its write callbacks never come, its connection stays.
    const client = new LeavingClient(Number.POSITIVE_INFINITY);
    let taken = 0;
    client.write = (_chunk, done) => {
      if (taken++ === 0) process.nextTick(done);
      return false;
    };
    const handle = await fsp.open(file, 'r');
    const reader = new BlobReader(handle, 0, 3 * 1024 * 1024 - 1);
    await expect(reader.writeTo(client, 50)).rejects.toThrow('the client took no data for 50 ms');
    expect(reader.sent).toBe(1024 * 1024);
    // The file was closed: its descriptor is gone.
    await expect(handle.stat()).rejects.toThrow();
  });
});

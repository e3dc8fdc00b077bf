import type fsp from 'node:fs/promises';

/** What a blob is written to: an HTTP response, or any writable with write callbacks. */
export interface BlobSink {
  write(chunk: Buffer, callback: (error?: Error | null) => void): boolean;
  end(callback?: () => void): unknown;
  once(event: 'close', listener: () => void): unknown;
  removeListener(event: 'close', listener: () => void): unknown;
  readonly destroyed: boolean;
  /** An HTTP response's connection: how much of a chunk the client has taken (stall detection). */
  readonly socket?: object | null;
}

const BUFFER_BYTES = 1 << 20;

/** A stalled sink is checked for this often: its deadline is enforced at most a quarter of itself late. */
const stallCheckIntervalOf = (stallMs: number) => Math.max(25, Math.min(1_000, Math.floor(stallMs / 4)));

/**
 * Copies bytes `start` to `end` (inclusive) of an open file to a sink through two reused 1 MiB
 * buffers: one is read from disk while the other is being written, and a buffer is refilled only
 * once its previous write completed. Unlike a read stream, which allocates a new buffer per chunk,
 * this allocates nothing per chunk, so a multi-gigabyte download does not drive the garbage
 * collector (docs/performance.md, File transfer). Closes the file in every case.
 */
export class BlobReader {
  /** Bytes the sink has taken so far. */
  sent = 0;

  constructor(
    private readonly handle: fsp.FileHandle,
    readonly start: number,
    readonly end: number,
  ) {}

  /**
   * Writes the range to `sink` and ends it; rejects when the sink fails or closes first, or, with
   * `stallMs`, when the client takes no byte for that long: one that stopped reading would
   * otherwise hold the file, the buffers and the connection for as long as it stays connected. A
   * slow client is not a stalled one: a chunk's bytes are counted as the connection takes them
   * (its write queue shrinking), not only once the whole megabyte is written.
   */
  async writeTo(sink: BlobSink, stallMs?: number): Promise<void> {
    const length = this.end - this.start + 1;
    const size = Math.max(1, Math.min(BUFFER_BYTES, length));
    const buffers = [Buffer.allocUnsafeSlow(size), Buffer.allocUnsafeSlow(size)];
    const writes: (Promise<void> | undefined)[] = [undefined, undefined];
    let closed!: () => void;
    let stalled!: () => void;
    const gone = new Promise<never>((_, reject) => {
      closed = () => reject(new Error('the client closed the connection'));
      stalled = () => reject(new Error(`the client took no data for ${stallMs} ms`));
    });
    gone.catch(() => undefined);
    sink.once('close', closed);
    // Time spent reading the disk (a busy thread pool) is not the client's.
    const disk = { reading: false };
    const watch = stallMs === undefined ? undefined : this.watchStall(sink, stallMs, disk, stalled);
    try {
      let position = this.start;
      let left = length;
      for (let i = 0; left > 0; i ^= 1) {
        if (writes[i]) await Promise.race([writes[i], gone]);
        if (sink.destroyed) throw new Error('the client closed the connection');
        const buffer = buffers[i]!;
        disk.reading = true;
        const { bytesRead } = await this.handle
          .read(buffer, 0, Math.min(buffer.length, left), position)
          .finally(() => (disk.reading = false));
        if (bytesRead === 0) throw new Error('the blob is shorter than its recorded size');
        const counted = write(sink, buffer.subarray(0, bytesRead)).then(() => {
          this.sent += bytesRead;
        });
        // Never an unhandled rejection: the loop stops awaiting it when the client goes away.
        counted.catch(() => undefined);
        writes[i] = counted;
        position += bytesRead;
        left -= bytesRead;
      }
      await Promise.race([Promise.all(writes.map((w) => w ?? Promise.resolve())), gone]);
      await new Promise<void>((resolve) => sink.end(resolve));
    } finally {
      clearInterval(watch);
      sink.removeListener('close', closed);
      await this.handle.close().catch(() => undefined);
    }
  }

  /**
   * Calls `stalled` once the sink has taken no byte for `stallMs` while the file was not being
   * read; clear the interval it returns.
   */
  private watchStall(
    sink: BlobSink,
    stallMs: number,
    disk: { readonly reading: boolean },
    stalled: () => void,
  ): NodeJS.Timeout {
    // The bytes of the connection's write queue (libuv's): what the kernel has not taken yet.
    const queued = () => (sink.socket as { _handle?: { writeQueueSize?: number } | null } | null | undefined)?._handle;
    const progress = () => `${this.sent}/${queued()?.writeQueueSize ?? ''}`;
    let last = progress();
    let since = performance.now();
    const watch = setInterval(() => {
      const now = performance.now();
      const current = progress();
      if (current !== last || disk.reading) {
        last = current;
        since = now;
      } else if (now - since >= stallMs) {
        clearInterval(watch);
        stalled();
      }
    }, stallCheckIntervalOf(stallMs));
    watch.unref();
    return watch;
  }

  /** Closes the file without sending it. */
  async close(): Promise<void> {
    await this.handle.close().catch(() => undefined);
  }
}

/** Resolves once the sink took the chunk. Never an unhandled rejection: the loop may stop awaiting it. */
function write(sink: BlobSink, chunk: Buffer): Promise<void> {
  const written = new Promise<void>((resolve, reject) => {
    sink.write(chunk, (error) => (error ? reject(error) : resolve()));
  });
  written.catch(() => undefined);
  return written;
}

import type fsp from 'node:fs/promises';

/** What a blob is written to: an HTTP response, or any writable with write callbacks. */
export interface BlobSink {
  write(chunk: Buffer, callback: (error?: Error | null) => void): boolean;
  end(callback?: () => void): unknown;
  once(event: 'close', listener: () => void): unknown;
  removeListener(event: 'close', listener: () => void): unknown;
  readonly destroyed: boolean;
}

const BUFFER_BYTES = 1 << 20;

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

  /** Writes the range to `sink` and ends it; rejects when the sink fails or closes first. */
  async writeTo(sink: BlobSink): Promise<void> {
    const length = this.end - this.start + 1;
    const size = Math.max(1, Math.min(BUFFER_BYTES, length));
    const buffers = [Buffer.allocUnsafeSlow(size), Buffer.allocUnsafeSlow(size)];
    const writes: (Promise<void> | undefined)[] = [undefined, undefined];
    let closed!: () => void;
    const gone = new Promise<never>((_, reject) => {
      closed = () => reject(new Error('the client closed the connection'));
    });
    gone.catch(() => undefined);
    sink.once('close', closed);
    try {
      let position = this.start;
      let left = length;
      for (let i = 0; left > 0; i ^= 1) {
        if (writes[i]) await Promise.race([writes[i], gone]);
        if (sink.destroyed) throw new Error('the client closed the connection');
        const buffer = buffers[i]!;
        const { bytesRead } = await this.handle.read(buffer, 0, Math.min(buffer.length, left), position);
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
      sink.removeListener('close', closed);
      await this.handle.close().catch(() => undefined);
    }
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

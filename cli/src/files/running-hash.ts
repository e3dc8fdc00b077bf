import { createHash, type Hash } from 'node:crypto';
import fs from 'node:fs';

/**
 * The SHA-256 of a file being written, kept as the bytes go by, that can take up from the bytes
 * already on disk: when the hashed bytes are not exactly the first `offset` bytes of the file
 * (a resumed download, or a failure after bytes were hashed but not written), the file's first
 * `offset` bytes are read again.
 */
export class RunningHash {
  #hash: Hash = createHash('sha256');
  #bytes = 0;

  update(chunk: Buffer): void {
    this.#hash.update(chunk);
    this.#bytes += chunk.length;
  }

  /** Makes the hash cover exactly the first `offset` bytes of `file`. */
  async catchUp(file: string, offset: number): Promise<void> {
    if (this.#bytes === offset) return;
    this.#hash = createHash('sha256');
    this.#bytes = 0;
    if (offset === 0) return;
    const stream = fs.createReadStream(file, { start: 0, end: offset - 1, highWaterMark: 1 << 20 });
    for await (const chunk of stream as AsyncIterable<Buffer>) this.update(chunk);
    if (this.#bytes !== offset) throw new Error(`${file} holds ${this.#bytes} bytes, ${offset} were expected`);
  }

  /** Lowercase hex; the hash cannot be updated after. */
  digest(): string {
    return this.#hash.digest('hex');
  }
}

import { createHash } from 'node:crypto';
import type { FileHandle } from 'node:fs/promises';

/** Size and lowercase hex SHA-256 of an open file, read as a stream from its start. */
export async function hashFileHandle(
  handle: FileHandle,
  signal?: AbortSignal,
): Promise<{ size: number; sha256: string }> {
  const hash = createHash('sha256');
  let size = 0;
  const stream = handle.createReadStream({ start: 0, autoClose: false, highWaterMark: 1 << 20 });
  const onAbort = () => stream.destroy(new Error('aborted'));
  signal?.addEventListener('abort', onAbort, { once: true });
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      hash.update(chunk);
      size += chunk.length;
    }
  } finally {
    signal?.removeEventListener('abort', onAbort);
  }
  return { size, sha256: hash.digest('hex') };
}

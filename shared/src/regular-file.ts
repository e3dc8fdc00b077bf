import fs from 'node:fs';

export interface ReadLimits {
  /** Refuse (code EFBIG) a file holding more bytes than this, before reading them all. */
  maxBytes?: number;
}

/**
 * The content of `file`, refusing what is not a regular file nor a directory before reading it: a
 * FIFO (which would block the read until something writes into it, for ever if nothing does), a
 * socket or a device (which would read a stream that never ends) put where a file of ours belongs,
 * by mistake or by someone else. Refused with `code` EINVAL and a message saying what it is and to
 * remove it; a directory fails as reading one does (EISDIR); a missing file as ENOENT; one past
 * `maxBytes` as EFBIG.
 */
export function readRegularFile(file: string, limits: ReadLimits = {}): string {
  // Non-blocking, so that opening a FIFO with no writer returns at once rather than waiting for one.
  const fd = fs.openSync(file, fs.constants.O_RDONLY | (fs.constants.O_NONBLOCK ?? 0));
  try {
    const stat = fs.fstatSync(fd);
    if (!stat.isFile() && !stat.isDirectory()) {
      const kind = stat.isFIFO() ? 'a FIFO' : stat.isSocket() ? 'a socket' : 'a device';
      throw Object.assign(new Error(`it is ${kind}, not a regular file (EINVAL): remove it`), { code: 'EINVAL' });
    }
    if (limits.maxBytes === undefined) return fs.readFileSync(fd, 'utf8');
    if (stat.size > limits.maxBytes) throw tooLarge(limits.maxBytes);
    return readCapped(fd, limits.maxBytes); // the file may grow while it is read
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * All of what `fd` holds as UTF-8, refusing (code EFBIG) past `maxBytes` without holding more than
 * that in memory: a file that grows while it is read, or a stream without end, ends in an error,
 * not in a process out of memory. `fd` must be blocking (a file, a device).
 */
export function readCapped(fd: number, maxBytes: number): string {
  const chunks: Buffer[] = [];
  const chunk = Buffer.alloc(64 * 1024);
  let total = 0;
  for (;;) {
    const n = fs.readSync(fd, chunk, 0, chunk.length, null);
    if (n === 0) return Buffer.concat(chunks, total).toString('utf8');
    total += n;
    if (total > maxBytes) throw tooLarge(maxBytes);
    chunks.push(Buffer.from(chunk.subarray(0, n)));
  }
}

function tooLarge(maxBytes: number): Error {
  return Object.assign(new Error(`it holds more than ${maxBytes} bytes (EFBIG)`), { code: 'EFBIG' });
}

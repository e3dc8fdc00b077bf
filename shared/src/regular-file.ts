import fs from 'node:fs';

/**
 * The content of `file`, refusing what is not a regular file nor a directory before reading it: a
 * FIFO (which would block the read until something writes into it, for ever if nothing does), a
 * socket or a device (which would read a stream that never ends) put where a file of ours belongs,
 * by mistake or by someone else. Refused with `code` EINVAL and a message saying what it is and to
 * remove it; a directory fails as reading one does (EISDIR); a missing file as ENOENT.
 */
export function readRegularFile(file: string): string {
  // Non-blocking, so that opening a FIFO with no writer returns at once rather than waiting for one.
  const fd = fs.openSync(file, fs.constants.O_RDONLY | (fs.constants.O_NONBLOCK ?? 0));
  try {
    const stat = fs.fstatSync(fd);
    if (!stat.isFile() && !stat.isDirectory()) {
      const kind = stat.isFIFO() ? 'a FIFO' : stat.isSocket() ? 'a socket' : 'a device';
      throw Object.assign(new Error(`it is ${kind}, not a regular file (EINVAL): remove it`), { code: 'EINVAL' });
    }
    return fs.readFileSync(fd, 'utf8');
  } finally {
    fs.closeSync(fd);
  }
}

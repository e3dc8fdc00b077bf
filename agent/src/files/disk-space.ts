import fs from 'node:fs';
import { formatBytes } from './format.js';
import { TransferError } from './transfer-error.js';

/** The free space of a file system as `fs.statfs` tells it (tests give their own). */
export type StatfsFn = (dir: string) => Promise<{ bavail: number; bsize: number }>;

/**
 * Refuses (a `final` TransferError naming both sizes) a download that needs `needed` more bytes
 * in `dir` when its file system has fewer available to this user. A file system that cannot tell
 * (statfs fails) is not a reason to refuse: the write fails later if it is really full.
 */
export async function checkFreeSpace(
  dir: string,
  needed: number,
  statfs: StatfsFn = fs.promises.statfs,
): Promise<void> {
  if (needed <= 0) return;
  let available: number;
  try {
    const stats = await statfs(dir);
    available = stats.bavail * stats.bsize;
  } catch {
    return;
  }
  if (available >= needed) return;
  throw new TransferError(
    'final',
    `not enough disk space for the download: it needs ${formatBytes(needed)} more in ${dir}, ` +
      `${formatBytes(available)} ${available === 1 ? 'is' : 'are'} available`,
  );
}

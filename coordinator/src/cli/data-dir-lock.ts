import fs from 'node:fs';
import path from 'node:path';
import { acquirePidLock, lockHolderPid } from '@drover/shared';

/**
 * One coordinator process at a time uses a data directory: `start`, `migrate` and `bootstrap`
 * hold `<data-dir>/coordinator.lock` (the pid of the process) while they run. A lock left by a
 * process that is gone (or a zombie, or whose pid was given to another process since) is taken
 * over.
 */
export const DATA_DIR_LOCK_FILE = 'coordinator.lock';

export function dataDirLockFile(dataDir: string): string {
  return path.join(dataDir, DATA_DIR_LOCK_FILE);
}

/** The pid of the running process that holds the data directory, or null. Creates nothing. */
export function dataDirHolder(dataDir: string): number | null {
  return lockHolderPid(dataDirLockFile(dataDir));
}

/**
 * Creates the data directory when missing (mode 0700) and takes its lock; returns the function
 * that releases it. Throws LockHeldError (`code: 'lock_held'`, with the holder's `pid`).
 */
export function lockDataDir(dataDir: string): () => void {
  fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  return acquirePidLock(dataDirLockFile(dataDir));
}

import fs from 'node:fs';
import path from 'node:path';
import { acquirePidLock, lockHolderPid, userNameOf } from '@drover/shared';

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

/**
 * Why root must not run `command` on the data directory of another user, or null: it exists and
 * belongs to another user (drover's, under the Debian package), which the service runs as. The
 * files root would write there, mode 0600, could not be read by the service: a restore's database
 * and keys, a start's keys and uploaded files (the service then fails at every start, or on those
 * files). Refused rather than chown-ed afterwards: nothing is left to root if the command stops
 * half-way. An absent directory is made by root, for root.
 */
export function rootInAnotherUsersDir(
  dataDir: string,
  command: 'start' | 'migrate' | 'bootstrap' | 'restore',
): string | null {
  if (process.getuid?.() !== 0) return null; // another user cannot write there at all: the error says so
  let owner: number;
  try {
    owner = fs.statSync(dataDir).uid;
  } catch {
    return null;
  }
  if (owner === 0) return null;
  const name = userNameOf(owner);
  const user = name ?? `uid ${owner}`;
  const how =
    command === 'restore'
      ? `\`sudo -u ${name ?? `'#${owner}'`} drover-coordinator restore …\``
      : command === 'start'
        ? 'start its service (`sudo systemctl start drover-coordinator`)'
        : `with the service's settings (\`sudo systemd-run --pipe --wait --collect -p User=${name ?? owner} -p EnvironmentFile=… drover-coordinator ${command}\`, docs/install.md)`;
  return (
    `the data directory ${dataDir} belongs to ${user}, and this runs as root: the coordinator, running as ${user}, ` +
    `could not read the files root would write there. Run it as ${user}: ${how}; ` +
    `or, to run the coordinator as root, give root the directory first (\`chown -R root: ${dataDir}\`)`
  );
}

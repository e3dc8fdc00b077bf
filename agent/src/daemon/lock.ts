import path from 'node:path';
import { acquirePidLock, isLockHeldError } from '@drover/shared';
import { AgentError } from '../errors.js';
import { describeFileError } from '../state/files.js';

export const LOCK_FILE = 'daemon.lock';

/**
 * Makes sure one daemon at a time uses a state directory (two would each run the same jobs):
 * `daemon.lock` names the daemon's process. A lock left by a process that is gone (or a zombie,
 * or whose pid now belongs to another process) is taken over. Returns the function that
 * releases it.
 */
export function acquireDaemonLock(stateDir: string, pid = process.pid): () => void {
  const file = path.join(stateDir, LOCK_FILE);
  try {
    return acquirePidLock(file, pid);
  } catch (error) {
    if (isLockHeldError(error)) {
      throw new AgentError(
        'already_running',
        `Another drover-agent (pid ${error.pid}) is already running with the state directory ${stateDir}`,
        { cause: error },
      );
    }
    const code = (error as NodeJS.ErrnoException).code;
    // A full disk is the likely cause on an edge machine: said in words, with what to do.
    const reason =
      code === 'ENOSPC'
        ? `no space left on the device in ${stateDir} (free some: \`df -h ${stateDir}\`)`
        : code === 'EINVAL'
          ? (error as Error).message // what stands at the lock's place, and to remove it
          : describeFileError(error, stateDir); // a read-only file system, a failing disk, a permission
    throw new AgentError('bad_state', `Cannot take the lock ${file}: ${reason}`, { cause: error });
  }
}

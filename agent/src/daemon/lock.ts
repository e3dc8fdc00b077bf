import fs from 'node:fs';
import path from 'node:path';
import { isAlive } from '../daemon-status.js';
import { AgentError } from '../errors.js';

export const LOCK_FILE = 'daemon.lock';

/**
 * Makes sure one daemon at a time uses a state directory (two would each run the same jobs):
 * `daemon.lock` holds the pid of the daemon. A lock left by a process that is gone is taken over.
 * Returns the function that releases it.
 */
export function acquireDaemonLock(stateDir: string, pid = process.pid): () => void {
  const file = path.join(stateDir, LOCK_FILE);
  for (let tries = 0; tries < 3; tries += 1) {
    try {
      fs.writeFileSync(file, `${pid}\n`, { flag: 'wx', mode: 0o600 });
      return () => {
        try {
          if (fs.readFileSync(file, 'utf8').trim() === String(pid)) fs.rmSync(file, { force: true });
        } catch {
          // already gone
        }
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') {
        throw new AgentError('bad_state', `Cannot create ${file}: ${(error as NodeJS.ErrnoException).code ?? error}`);
      }
    }
    const holder = Number.parseInt(readOrEmpty(file), 10);
    if (Number.isInteger(holder) && holder > 0 && holder !== pid && isAlive(holder)) {
      throw new AgentError(
        'already_running',
        `Another drover-agent (pid ${holder}) is already running with the state directory ${stateDir}`,
      );
    }
    fs.rmSync(file, { force: true }); // stale: its process is gone
  }
  throw new AgentError('bad_state', `Cannot take the lock ${file}`);
}

function readOrEmpty(file: string): string {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}

/**
 * Sends `signal` to the whole process group led by `pid` (a step spawned detached leads its
 * own group, so its children and grandchildren get it too). A group already gone is fine.
 */
export function signalProcessGroup(pid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(-pid, signal);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ESRCH') return false;
    throw error;
  }
}

/** Process groups of the steps running now (a forced exit kills them first). */
const activeGroups = new Set<number>();
/**
 * Groups told to stop whose SIGKILL is still to come (terminateProcessGroup): their step may have
 * ended, but a process that ignores SIGTERM, or a background child, can still be in them.
 */
const stoppingGroups = new Map<number, NodeJS.Timeout>();

export function trackProcessGroup(pid: number): () => void {
  activeGroups.add(pid);
  return () => activeGroups.delete(pid);
}

/**
 * SIGKILL, at once, to every running step's process group and to every group whose SIGKILL is
 * still to come: the agent is exiting, and no process of a step may outlive it (its timer would
 * never fire).
 */
export function killAllProcessGroups(): void {
  for (const pid of activeGroups) signalProcessGroup(pid, 'SIGKILL');
  activeGroups.clear();
  for (const [pid, timer] of stoppingGroups) {
    clearTimeout(timer);
    signalProcessGroup(pid, 'SIGKILL');
  }
  stoppingGroups.clear();
}

/**
 * SIGTERM to the group now, SIGKILL to whatever is left of it after `graceMs` (a process that
 * ignores SIGTERM, or a grandchild that outlived its parent), or when the agent exits first
 * (killAllProcessGroups). Returns a function that cancels the pending SIGKILL.
 */
export function terminateProcessGroup(pid: number, graceMs: number): () => void {
  if (!signalProcessGroup(pid, 'SIGTERM')) return () => {};
  clearTimeout(stoppingGroups.get(pid));
  const timer = setTimeout(() => {
    stoppingGroups.delete(pid);
    signalProcessGroup(pid, 'SIGKILL');
  }, graceMs);
  timer.unref();
  stoppingGroups.set(pid, timer);
  return () => {
    clearTimeout(timer);
    if (stoppingGroups.get(pid) === timer) stoppingGroups.delete(pid);
  };
}

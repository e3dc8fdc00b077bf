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

export function trackProcessGroup(pid: number): () => void {
  activeGroups.add(pid);
  return () => activeGroups.delete(pid);
}

/** SIGKILL to every running step's process group, at once (the agent is exiting). */
export function killAllProcessGroups(): void {
  for (const pid of activeGroups) signalProcessGroup(pid, 'SIGKILL');
  activeGroups.clear();
}

/**
 * SIGTERM to the group now, SIGKILL to whatever is left of it after `graceMs` (a process that
 * ignores SIGTERM, or a grandchild that outlived its parent). Returns a function that cancels
 * the pending SIGKILL.
 */
export function terminateProcessGroup(pid: number, graceMs: number): () => void {
  if (!signalProcessGroup(pid, 'SIGTERM')) return () => {};
  const timer = setTimeout(() => signalProcessGroup(pid, 'SIGKILL'), graceMs);
  timer.unref();
  return () => clearTimeout(timer);
}

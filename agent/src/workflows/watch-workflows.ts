import fs from 'node:fs';

export interface WatchOptions {
  /** Quiet time after the last change before `onChange` runs (ms). */
  debounceMs?: number;
  /** How often to look for the directory while it does not exist (ms). */
  pollMs?: number;
}

export interface WorkflowWatcher {
  close(): void;
}

/**
 * Calls `onChange` (debounced, ~200 ms) whenever something in `dir` may have changed: a file
 * written, created, removed or renamed over (the way most editors save). While the directory
 * does not exist, it is polled for (every `pollMs`); when it appears, disappears or is replaced,
 * `onChange` runs as well, so the caller simply reloads. `onChange` errors are the caller's to handle: a throw
 * is caught and ignored here so that watching goes on.
 */
export function watchWorkflows(dir: string, onChange: () => void, options: WatchOptions = {}): WorkflowWatcher {
  const debounceMs = options.debounceMs ?? 200;
  const pollMs = options.pollMs ?? 1000;
  let watcher: fs.FSWatcher | null = null;
  let watchedIno: number | null = null;
  let debounce: NodeJS.Timeout | null = null;
  let poll: NodeJS.Timeout | null = null;
  let closed = false;

  const fire = (): void => {
    if (closed) return;
    try {
      onChange();
    } catch {
      // the caller reports its own failures; the watcher keeps watching
    }
  };

  const changed = (): void => {
    if (closed) return;
    if (debounce) clearTimeout(debounce);
    debounce = setTimeout(() => {
      debounce = null;
      // The directory itself may have been removed or replaced: watch the new one, or wait for it.
      if (inodeOf(dir) !== watchedIno) {
        stopWatching();
        startWatching();
      }
      fire();
    }, debounceMs);
    debounce.unref?.();
  };

  const startWatching = (): boolean => {
    const ino = inodeOf(dir);
    if (ino === null) return false;
    try {
      watcher = fs.watch(dir, { persistent: false }, changed);
      watcher.on('error', () => changed()); // e.g. the directory was removed: re-check after the debounce
      watchedIno = ino;
      return true;
    } catch {
      watcher = null;
      return false;
    }
  };

  const stopWatching = (): void => {
    watcher?.close();
    watcher = null;
    watchedIno = null;
  };

  // A slow check as well: the directory may appear, disappear or be replaced without an event.
  poll = setInterval(() => {
    if (inodeOf(dir) !== watchedIno) changed();
  }, pollMs);
  poll.unref?.();

  startWatching();

  return {
    close(): void {
      closed = true;
      if (debounce) clearTimeout(debounce);
      if (poll) clearInterval(poll);
      debounce = null;
      poll = null;
      stopWatching();
    },
  };
}

/** The directory's inode, or null when it is missing or not a directory. */
function inodeOf(dir: string): number | null {
  try {
    const stat = fs.statSync(dir);
    return stat.isDirectory() ? stat.ino : null;
  } catch {
    return null;
  }
}

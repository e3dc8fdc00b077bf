import fs from 'node:fs';
import path from 'node:path';
import { isWorkflowFileName } from './load-workflows.js';

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
 * written, created, removed or renamed over (the way most editors save), and the file a workflow
 * file that is a symbolic link points to (in its own directory, which events of `dir` do not
 * cover: a link to /opt/app/deploy.yaml, a checkout updated by `git pull`). While the directory
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
  /** The directories of the files that links of `dir` point to, with the names pointed to in each. */
  const targets = new Map<string, { watcher: fs.FSWatcher; names: Set<string> }>();
  /** linkTargets as last followed, to see a link that points elsewhere now (a `current` link switched). */
  let followed = '';

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
      followLinks();
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

  /** Watches the directories the workflow files' links point into (only for those names), as they are now. */
  const followLinks = (): void => {
    const now = linkTargets(dir);
    followed = describeTargets(now);
    for (const [targetDir, target] of targets) {
      if (now.has(targetDir)) continue;
      target.watcher.close();
      targets.delete(targetDir);
    }
    for (const [targetDir, names] of now) {
      const known = targets.get(targetDir);
      if (known) {
        known.names = names;
        continue;
      }
      try {
        const target = {
          names,
          watcher: fs.watch(targetDir, { persistent: false }, (_event, name) => {
            if (name === null || target.names.has(String(name))) changed();
          }),
        };
        target.watcher.on('error', () => changed());
        targets.set(targetDir, target);
      } catch {
        // a directory that cannot be watched (gone, not readable): the link is judged at the next load
      }
    }
  };

  // A slow check as well: the directory may appear, disappear or be replaced without an event, and
  // a link may point elsewhere without one (a link on its way, `/opt/app/current`, switched).
  poll = setInterval(() => {
    if (inodeOf(dir) !== watchedIno || (followed !== '[]' && describeTargets(linkTargets(dir)) !== followed)) changed();
  }, pollMs);
  poll.unref?.();

  startWatching();
  followLinks();

  return {
    close(): void {
      closed = true;
      if (debounce) clearTimeout(debounce);
      if (poll) clearInterval(poll);
      debounce = null;
      poll = null;
      stopWatching();
      for (const target of targets.values()) target.watcher.close();
      targets.clear();
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

const describeTargets = (targets: Map<string, Set<string>>): string =>
  JSON.stringify([...targets].map(([targetDir, names]) => [targetDir, [...names].sort()]).sort());

/**
 * Where the workflow files of `dir` that are symbolic links point: the directory of each file
 * pointed to (the link's target once every link is followed, or, for a link to nothing yet, the
 * place it names), with the file names pointed to there. `dir` itself is left out (watched already).
 */
function linkTargets(dir: string): Map<string, Set<string>> {
  const targets = new Map<string, Set<string>>();
  let entries: fs.Dirent[];
  let self: string;
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true });
    self = fs.realpathSync(dir);
  } catch {
    return targets;
  }
  for (const entry of entries) {
    if (!entry.isSymbolicLink() || !isWorkflowFileName(entry.name)) continue;
    const link = path.join(dir, entry.name);
    let target: string;
    try {
      target = fs.realpathSync(link);
    } catch {
      try {
        target = path.resolve(dir, fs.readlinkSync(link));
      } catch {
        continue;
      }
    }
    const targetDir = path.dirname(target);
    if (targetDir === self || targetDir === dir) continue;
    const names = targets.get(targetDir) ?? new Set<string>();
    names.add(path.basename(target));
    targets.set(targetDir, names);
  }
  return targets;
}

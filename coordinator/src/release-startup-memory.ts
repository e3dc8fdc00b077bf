import { performance } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** How long after listening the coordinator first looks whether it is quiet, and between looks. */
export const RELEASE_LOOK_EVERY_MS = 10_000;
/** Quiet: the event loop busy less than this share of the time since the last look. */
export const QUIET_UTILIZATION = 0.05;
/** Looks before giving up (a coordinator busy for five minutes after starting has collected by then). */
const MAX_LOOKS = 30;

export interface ReleaseOptions {
  lookEveryMs?: number;
  /** The collection (tests replace it); by default V8's memory-reducing one (`collectLastResort`). */
  collect?: () => void;
  /** Told how long the collection took and what it gave back. */
  onReleased?: (released: { ms: number; rssBefore: number; rssAfter: number }) => void;
}

/**
 * One memory-reducing garbage collection once the coordinator has started and its event loop is
 * quiet. Starting it (migrations, the routes and their schemas compiled, the first requests)
 * leaves garbage that an idle coordinator never collects, since nothing makes V8 reduce its heap:
 * this gives back ~13–15 MiB of its idle RSS (docs/performance.md, "Coordinator memory"). The
 * collection stops the event loop for some 40–80 ms, so it waits for a look at which the loop was
 * busy less than 5 % of the time since the last (a coordinator restarted into a reconnect storm
 * is not quiet), and gives up after 30 looks. Returns a function that cancels it.
 */
export function releaseStartupMemoryWhenQuiet(options: ReleaseOptions = {}): () => void {
  const lookEveryMs = options.lookEveryMs ?? RELEASE_LOOK_EVERY_MS;
  const collect = options.collect ?? collectLastResort;
  let since = performance.eventLoopUtilization();
  let looks = 0;
  let timer: NodeJS.Timeout | undefined;
  const look = () => {
    const now = performance.eventLoopUtilization();
    const { utilization } = performance.eventLoopUtilization(now, since);
    since = now;
    looks += 1;
    if (utilization < QUIET_UTILIZATION) {
      const rssBefore = process.memoryUsage.rss();
      const began = performance.now();
      collect();
      options.onReleased?.({ ms: performance.now() - began, rssBefore, rssAfter: process.memoryUsage.rss() });
    } else if (looks < MAX_LOOKS) schedule();
  };
  const schedule = () => {
    timer = setTimeout(look, lookEveryMs);
    timer.unref();
  };
  schedule();
  return () => clearTimeout(timer);
}

/**
 * V8's most thorough collection, which also gives memory back to the system. Reached without
 * starting Node with `--expose-gc`: the flag is set for a moment to make a context that has `gc`,
 * then unset, so that no other code sees a `gc` global.
 */
export function collectLastResort(): void {
  setFlagsFromString('--expose-gc');
  let gc: (options: object) => void;
  try {
    gc = runInNewContext('gc') as typeof gc;
  } finally {
    setFlagsFromString('--no-expose-gc');
  }
  gc({ type: 'major', execution: 'sync', flavor: 'last-resort' });
}

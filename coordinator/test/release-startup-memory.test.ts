import { describe, expect, it } from 'vitest';
import { collectLastResort, releaseStartupMemoryWhenQuiet } from '../src/release-startup-memory.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** Waits until `done()` holds (a loaded machine delays the looks), 10 s at most. */
const until = async (done: () => boolean) => {
  for (const end = Date.now() + 10_000; !done() && Date.now() < end;) await sleep(20);
};
/** Keeps the event loop busy for `ms` (one synchronous stretch). */
const busy = (ms: number) => {
  const until = performance.now() + ms;
  while (performance.now() < until);
};

describe('releaseStartupMemoryWhenQuiet', () => {
  it('collects once, at the first look after a quiet stretch, and tells what it gave back', async () => {
    let collections = 0;
    const released: { ms: number; rssBefore: number; rssAfter: number }[] = [];
    const cancel = releaseStartupMemoryWhenQuiet({
      lookEveryMs: 100,
      collect: () => (collections += 1),
      onReleased: (r) => released.push(r),
    });
    await until(() => collections > 0);
    await sleep(250); // and never again
    cancel();
    expect(collections).toBe(1);
    expect(released).toHaveLength(1);
    expect(released[0]!.rssBefore).toBeGreaterThan(0);
  });

  it('waits while the event loop is busy', async () => {
    let collections = 0;
    const cancel = releaseStartupMemoryWhenQuiet({ lookEveryMs: 100, collect: () => (collections += 1) });
    // Busy 90 % of the time for the first looks.
    for (let i = 0; i < 4; i++) {
      busy(90);
      await sleep(10);
    }
    expect(collections).toBe(0);
    await until(() => collections > 0);
    cancel();
    expect(collections).toBe(1);
  });

  it('does nothing once cancelled', async () => {
    let collections = 0;
    releaseStartupMemoryWhenQuiet({ lookEveryMs: 50, collect: () => (collections += 1) })();
    await sleep(150);
    expect(collections).toBe(0);
  });
});

describe('collectLastResort', () => {
  it('runs V8 collection without --expose-gc, and leaves no gc global behind', async () => {
    expect(typeof (globalThis as { gc?: unknown }).gc).toBe('undefined');
    const ref = new WeakRef(Array.from({ length: 200_000 }, (_, i) => ({ i })));
    // A WeakRef made in this turn keeps its target until the turn ends.
    await sleep(0);
    collectLastResort();
    expect(ref.deref()).toBeUndefined();
    expect(typeof (globalThis as { gc?: unknown }).gc).toBe('undefined');
  });
});

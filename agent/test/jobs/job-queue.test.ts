import { describe, expect, it } from 'vitest';
import { JobQueue } from '../../src/jobs/job-queue.js';

/** A job body that ends when the test says so. */
function gate(): { run: () => Promise<void>; started: boolean; finish: () => void } {
  const { promise: ended, resolve: finish } = Promise.withResolvers<void>();
  const g = {
    started: false,
    finish: () => finish(),
    run: () => {
      g.started = true;
      return ended;
    },
  };
  return g;
}

const job = (jobId: string) => ({ jobId, workflowName: `wf-${jobId}` });

describe('the job queue', () => {
  it('starts a job at once when idle, runs one at a time in arrival order and reports every change', async () => {
    const seen: string[] = [];
    const queue = new JobQueue(3, () => {
      seen.push(`${queue.running?.jobId ?? '-'}|${queue.waiting.map((w) => w.jobId).join(',')}`);
    });
    const [a, b, c] = [gate(), gate(), gate()];
    queue.add(job('a'), a.run);
    expect(a.started).toBe(true); // synchronously: nothing was running
    expect(queue.running).toMatchObject({ jobId: 'a', workflowName: 'wf-a', startedAt: expect.any(String) });
    queue.add(job('b'), b.run);
    queue.add(job('c'), c.run);
    expect(queue.isFull).toBe(true);
    expect(queue.has('b')).toBe(true);
    expect(queue.waiting).toEqual([job('b'), job('c')]);
    expect(b.started).toBe(false);

    a.finish();
    await expect.poll(() => b.started).toBe(true);
    expect(c.started).toBe(false);
    expect(queue.isFull).toBe(false);
    b.finish();
    await expect.poll(() => c.started).toBe(true);
    c.finish();
    await queue.onIdle();
    expect(queue.running).toBeNull();
    expect(seen).toEqual(['-|a', 'a|', 'a|b', 'a|b,c', '-|b,c', 'b|c', '-|c', 'c|', '-|']);
  });

  it('gives back the waiting jobs, which never run, and is idle once the running one ends', async () => {
    let changes = 0;
    const queue = new JobQueue(4, () => changes++);
    const [a, b, c] = [gate(), gate(), gate()];
    queue.add(job('a'), a.run);
    queue.add(job('b'), b.run);
    queue.add(job('c'), c.run);
    const before = changes;
    expect(queue.takeWaiting()).toEqual([job('b'), job('c')]);
    expect(changes).toBe(before + 1);
    expect(queue.waiting).toEqual([]);
    expect(queue.has('b')).toBe(false);
    expect(queue.takeWaiting()).toEqual([]);
    expect(changes).toBe(before + 1); // nothing taken: no change

    let idle = false;
    const onIdle = queue.onIdle().then(() => (idle = true));
    await Promise.resolve();
    expect(idle).toBe(false);
    a.finish();
    await onIdle;
    expect(b.started || c.started).toBe(false);
    expect(queue.running).toBeNull();
  });

  it('is idle at once when nothing runs or waits', async () => {
    const queue = new JobQueue(1);
    await expect(queue.onIdle()).resolves.toBeUndefined();
    expect(queue.isFull).toBe(false);
  });
});

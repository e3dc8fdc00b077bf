import { describe, expect, it } from 'vitest';
import { KeyedQueue } from '../../src/util/keyed-queue.js';

describe('KeyedQueue', () => {
  it('runs calls for one key one at a time, in order, even after one throws; other keys do not wait', async () => {
    const queue = new KeyedQueue();
    const events: string[] = [];
    const first = Promise.withResolvers<string>();
    const a1 = queue.run('a', async () => {
      events.push('a1 start');
      const value = await first.promise;
      events.push('a1 end');
      return value;
    });
    const a2 = queue.run('a', async () => {
      events.push('a2 start');
      throw new Error('a2 failed');
    });
    const a3 = queue.run('a', async () => {
      events.push('a3 start');
      return 'a3';
    });
    const b1 = queue.run('b', async () => {
      events.push('b1 start');
      return 'b1';
    });
    await expect(b1).resolves.toBe('b1');
    expect(events).toEqual(['a1 start', 'b1 start']);
    first.resolve('a1');
    await expect(a1).resolves.toBe('a1');
    await expect(a2).rejects.toThrow('a2 failed');
    await expect(a3).resolves.toBe('a3');
    expect(events).toEqual(['a1 start', 'b1 start', 'a1 end', 'a2 start', 'a3 start']);
  });

  it('forgets a key once its last call finished', async () => {
    const queue = new KeyedQueue();
    await queue.run('a', async () => 1);
    await expect(queue.run('a', async () => Promise.reject(new Error('no')))).rejects.toThrow('no');
    expect((queue as unknown as { tails: Map<string, unknown> }).tails.size).toBe(0);
  });
});

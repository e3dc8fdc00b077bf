import { describe, expect, it } from 'vitest';
import { batchLoader } from '../../src/util/batch-loader.js';

describe('batchLoader', () => {
  it('reads the keys asked for in one turn of the event loop together, each once', async () => {
    const calls: string[][] = [];
    const load = batchLoader(async (keys: readonly string[]) => {
      calls.push([...keys]);
      return new Map(keys.filter((k) => k !== 'missing').map((k) => [k, k.toUpperCase()]));
    });
    const values = await Promise.all(['a', 'b', 'a', 'missing'].map(load));
    expect(values).toEqual(['A', 'B', 'A', undefined]);
    expect(calls).toEqual([['a', 'b', 'missing']]);
    expect(await load('c')).toBe('C');
    expect(calls).toEqual([['a', 'b', 'missing'], ['c']]);
  });

  it('splits a large batch into reads of at most maxBatch keys', async () => {
    const sizes: number[] = [];
    const load = batchLoader(async (keys: readonly number[]) => {
      sizes.push(keys.length);
      return new Map(keys.map((k) => [k, k * 2]));
    }, 4);
    expect(await Promise.all([1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map(load))).toEqual([2, 4, 6, 8, 10, 12, 14, 16, 18, 20]);
    expect(sizes).toEqual([4, 4, 2]);
  });

  it('rejects every read of a batch that failed, and reads again afterwards', async () => {
    let fail = true;
    const load = batchLoader(async (keys: readonly string[]) => {
      if (fail) throw new Error('connection lost');
      return new Map(keys.map((k) => [k, k]));
    });
    const results = await Promise.allSettled([load('a'), load('b')]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    fail = false;
    expect(await load('a')).toBe('a');
  });
});

import { describe, expect, it } from 'vitest';
import { GenerationCache } from '../../src/domain/generation-cache.js';

function counter(start = 0) {
  let generation = start;
  return {
    generation: async () => generation,
    bump() {
      generation++;
    },
  };
}

function loader<T>(value: T) {
  let calls = 0;
  return {
    load: async () => {
      calls++;
      return value;
    },
    get calls() {
      return calls;
    },
  };
}

describe('GenerationCache', () => {
  it('loads a key once while the generation stays the same', async () => {
    const cache = new GenerationCache<string[]>(counter());
    const l = loader(['x']);
    expect(await cache.get('k', l.load)).toEqual(['x']);
    expect(await cache.get('k', l.load)).toBe(await cache.get('k', l.load));
    expect(l.calls).toBe(1);
  });

  it('loads again after any write moved the generation', async () => {
    const c = counter();
    const cache = new GenerationCache<number>(c);
    let value = 1;
    const load = async () => value;
    expect(await cache.get('k', load)).toBe(1);
    value = 2;
    expect(await cache.get('k', load)).toBe(1);
    c.bump();
    expect(await cache.get('k', load)).toBe(2);
  });

  it('uses a reading of the counter the caller already made, without reading it again', async () => {
    let reads = 0;
    const cache = new GenerationCache<string>({
      generation: async () => {
        reads++;
        return 7;
      },
    });
    expect(await cache.get('k', async () => 'A', 7)).toBe('A');
    expect(await cache.get('k', async () => 'B', 7)).toBe('A');
    expect(reads).toBe(0);
    expect(await cache.get('k', async () => 'C', 8)).toBe('C');
  });

  it('answers an older reading from the database without disturbing the newer entries', async () => {
    const cache = new GenerationCache<string>(counter());
    expect(await cache.get('k', async () => 'new', 5)).toBe('new');
    expect(await cache.get('k', async () => 'old', 4)).toBe('old');
    expect(await cache.get('k', async () => 'other', 5)).toBe('new');
  });

  it('keeps keys apart', async () => {
    const cache = new GenerationCache<string>(counter());
    expect(await cache.get('a', async () => 'A')).toBe('A');
    expect(await cache.get('b', async () => 'B')).toBe('B');
    expect(await cache.get('a', async () => 'other')).toBe('A');
  });

  it('does not remember a null result', async () => {
    const cache = new GenerationCache<string>(counter());
    const l = loader<string | null>(null);
    expect(await cache.get('k', l.load)).toBeNull();
    expect(await cache.get('k', l.load)).toBeNull();
    expect(l.calls).toBe(2);
  });

  it('drops a result loaded while another call moved the cache to a newer generation', async () => {
    const c = counter();
    const cache = new GenerationCache<string>(c);
    let release!: () => void;
    const slow = cache.get('k', () => new Promise<string>((resolve) => (release = () => resolve('old'))));
    await new Promise((r) => setImmediate(r));
    c.bump();
    expect(await cache.get('other', async () => 'new')).toBe('new');
    release();
    expect(await slow).toBe('old');
    expect(await cache.get('k', async () => 'fresh')).toBe('fresh');
  });

  it('starts over past its size bound', async () => {
    const cache = new GenerationCache<number>(counter(), 2);
    await cache.get('a', async () => 1);
    await cache.get('b', async () => 2);
    await cache.get('c', async () => 3);
    expect(await cache.get('a', async () => 10)).toBe(10);
    expect(await cache.get('c', async () => 30)).toBe(3);
  });
});

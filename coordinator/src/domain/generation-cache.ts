import type { ChangeCounterRepository } from '../db/repositories/change-counter.js';

/**
 * A memory cache that is exact rather than merely recent. Every entry belongs to one generation
 * of the change counter, which database triggers bump on any write to agents, workflows,
 * triggers or api_tokens (migration 0002); when the generation moves, every entry is dropped.
 * A hit costs one single-row read instead of the queries and row decoding of a miss. Only cache
 * values computed from those four tables. Cached values are shared: callers must not mutate them.
 */
export class GenerationCache<V> {
  private generation = Number.NaN;
  private entries = new Map<string, V>();

  constructor(
    private readonly counters: Pick<ChangeCounterRepository, 'generation'>,
    /** At most this many keys are remembered; past it the cache starts over. */
    private readonly maxEntries = 1000,
  ) {}

  /** The value of `key`, loaded by `load` unless this generation already holds it. Null is not cached. */
  async get<T extends V | null>(key: string, load: () => Promise<T>): Promise<T> {
    const generation = await this.counters.generation();
    if (generation !== this.generation) {
      this.generation = generation;
      this.entries = new Map();
    }
    const hit = this.entries.get(key);
    if (hit !== undefined) return hit as T;
    const value = await load();
    // A result loaded while another request moved the cache to a newer generation may predate
    // that generation's write: drop it rather than file it under the newer generation.
    if (value !== null && generation === this.generation) {
      if (this.entries.size >= this.maxEntries) this.entries = new Map();
      this.entries.set(key, value);
    }
    return value;
  }
}

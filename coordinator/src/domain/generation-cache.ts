import type { ChangeCounterRepository } from './model/change-counter.js';

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

  /**
   * The value of `key`, loaded by `load` unless this generation already holds it. Null is not cached.
   * `generation`: a reading of the counter the caller already made for this request (one read
   * serves every cache a request consults, as if the request ran at that instant); by default the
   * counter is read now.
   */
  async get<T extends V | null>(key: string, load: () => Promise<T>, generation?: number): Promise<T> {
    generation ??= await this.counters.generation();
    // A request that read the counter before another one moved the cache on: answer it from the
    // database as of now, without touching the newer entries (the counter only grows).
    if (generation < this.generation) return load();
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

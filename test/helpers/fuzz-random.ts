/**
 * A small seeded pseudo-random generator (sfc32, seeded through splitmix32) for fuzz tests: the
 * same seed gives the same sequence of choices on every machine, so a failure can be replayed.
 */

export const DEFAULT_FUZZ_SEED = 20_240_601;

/** The seed of this run: `DROVER_FUZZ_SEED` (an integer) when set, else the fixed default. */
export function fuzzSeed(env: NodeJS.ProcessEnv = process.env): number {
  const given = env.DROVER_FUZZ_SEED;
  if (given === undefined || given === '') return DEFAULT_FUZZ_SEED;
  if (!/^\d{1,10}$/.test(given) || Number(given) > 0xffffffff) {
    throw new Error(`Expected DROVER_FUZZ_SEED to be an integer from 0 to 4294967295, got \`${given}\``);
  }
  return Number(given);
}

export const DEFAULT_CASES_PER_ROUTE = 80;

/**
 * Cases per route: `DROVER_FUZZ_CASES` when set, else the default. At least 40, so that every
 * route still gets past its refusals into its handler a few times.
 */
export function fuzzCasesPerRoute(env: NodeJS.ProcessEnv = process.env): number {
  const given = env.DROVER_FUZZ_CASES;
  if (given === undefined || given === '') return DEFAULT_CASES_PER_ROUTE;
  if (!/^\d{1,6}$/.test(given) || Number(given) < 40) {
    throw new Error(`Expected DROVER_FUZZ_CASES to be an integer from 40 to 999999, got \`${given}\``);
  }
  return Number(given);
}

function splitmix32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x9e3779b9) >>> 0;
    let z = state;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
    return (z ^ (z >>> 16)) >>> 0;
  };
}

export class Random {
  private a: number;
  private b: number;
  private c: number;
  private d: number;

  constructor(seed: number) {
    const mix = splitmix32(seed);
    this.a = mix();
    this.b = mix();
    this.c = mix();
    this.d = mix();
    for (let i = 0; i < 12; i++) this.next();
  }

  /** A uniform 32-bit unsigned integer. */
  next(): number {
    const t = (((this.a + this.b) >>> 0) + this.d) >>> 0;
    this.d = (this.d + 1) >>> 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) >>> 0;
    this.c = ((this.c << 21) | (this.c >>> 11)) >>> 0;
    this.c = (this.c + t) >>> 0;
    return t;
  }

  /** A float in [0, 1). */
  float(): number {
    return this.next() / 0x1_0000_0000;
  }

  /** An integer in [min, max] (both included). */
  int(min: number, max: number): number {
    return min + Math.floor(this.float() * (max - min + 1));
  }

  /** True with probability `p`. */
  chance(p: number): boolean {
    return this.float() < p;
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new Error('pick from an empty list');
    return items[this.int(0, items.length - 1)]!;
  }

  /** One of `choices`, each as likely as its weight. */
  weighted<T>(choices: readonly (readonly [number, T])[]): T {
    const total = choices.reduce((sum, [w]) => sum + w, 0);
    let at = this.float() * total;
    for (const [weight, value] of choices) {
      at -= weight;
      if (at < 0) return value;
    }
    return choices[choices.length - 1]![1];
  }

  shuffle<T>(items: readonly T[]): T[] {
    const out = [...items];
    for (let i = out.length - 1; i > 0; i--) {
      const j = this.int(0, i);
      [out[i], out[j]] = [out[j]!, out[i]!];
    }
    return out;
  }

  /** A child generator, so that one part's number of draws does not shift another's. */
  fork(): Random {
    return new Random(this.next());
  }

  /** A UUID (version 4 layout) made from this generator. */
  uuid(): string {
    const hex = Array.from({ length: 32 }, () => this.int(0, 15).toString(16));
    hex[12] = '4';
    hex[16] = ((this.int(0, 3) | 8) >>> 0).toString(16);
    const s = hex.join('');
    return `${s.slice(0, 8)}-${s.slice(8, 12)}-${s.slice(12, 16)}-${s.slice(16, 20)}-${s.slice(20)}`;
  }

  /** `length` characters drawn from `alphabet`. */
  string(length: number, alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789'): string {
    let out = '';
    for (let i = 0; i < length; i++) out += alphabet[this.int(0, alphabet.length - 1)];
    return out;
  }

  bytes(length: number): Buffer {
    const out = Buffer.alloc(length);
    for (let i = 0; i < length; i++) out[i] = this.int(0, 255);
    return out;
  }
}

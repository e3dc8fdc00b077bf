import { createMasker, type Masker } from '../exec/secret-masker.js';
import { loadSecrets, type LoadedSecrets } from './secrets.js';

/**
 * The daemon's secrets: each read of `secrets.yaml` goes through `load`, which remembers the
 * values, and `masker` masks every value read since the start. What leaves the agent (reports,
 * deployment reports, workflow definitions) is masked with it, so that a value rotated out of
 * the file stays masked in what was produced with it, and nothing waits for a read of the file.
 */
export class KnownSecrets {
  readonly #values = new Set<string>();
  #masker: Masker = createMasker([]);
  #jsonMasker: Masker | null = null;
  readonly #stateDir: string;

  constructor(stateDir: string) {
    this.#stateDir = stateDir;
  }

  /** Reads the secrets file (loadSecrets) and remembers its values. */
  async load(): Promise<LoadedSecrets> {
    const loaded = await loadSecrets(this.#stateDir);
    this.remember(Object.values(loaded.secrets));
    return loaded;
  }

  remember(values: Iterable<string>): void {
    const before = this.#values.size;
    for (const value of values) this.#values.add(value);
    if (this.#values.size === before) return;
    this.#masker = createMasker(this.#values);
    this.#jsonMasker = null;
  }

  /** Masks every value read so far. */
  get masker(): Masker {
    return this.#masker;
  }

  /** Finds the same values written inside JSON strings (escaped as JSON escapes them). */
  get jsonMasker(): Masker {
    this.#jsonMasker ??= createMasker(this.#values, (value) => JSON.stringify(value).slice(1, -1));
    return this.#jsonMasker;
  }
}

import path from 'node:path';
import { writeFileAtomic } from '../state/files.js';
import {
  COUNTERS_FILE,
  countersAsPrometheus,
  readCountersFile,
  zeroCounters,
  type AgentCounters,
  type CounterName,
} from './agent-counters.js';
import { WriteFailures } from './write-failures.js';

/** How long increments gather before the files are rewritten. */
export const COUNTERS_WRITE_DELAY_MS = 100;

export interface CountersWriterOptions {
  /** `run --metrics-file`: also written there in the Prometheus text format (mode 0644, for node_exporter). */
  metricsFile?: string | undefined;
  onError?: (error: unknown) => void;
  /** `counters.json` is damaged: the counts start again from zero (the file is rewritten). */
  onDamaged?: (file: string, reason: string) => void;
  delayMs?: number;
}

/**
 * Counts what the daemon does (agent-counters.ts): starts from the counts a previous run left in
 * `counters.json`, and rewrites that file (and the metrics file, if any) atomically, the
 * increments of `delayMs` in one write, as status.json is (daemon-status-writer.ts). Not flushed
 * to disk: a power cut may lose the last increments, never the file.
 */
export class CountersWriter {
  #counters: AgentCounters;
  #timer: NodeJS.Timeout | null = null;
  #closed = false;
  readonly #stateDir: string;
  readonly #options: CountersWriterOptions;
  readonly #failures = new WriteFailures();

  constructor(stateDir: string, options: CountersWriterOptions = {}) {
    this.#stateDir = stateDir;
    this.#options = options;
    const read = readCountersFile(stateDir);
    if ('damaged' in read) options.onDamaged?.(path.join(stateDir, COUNTERS_FILE), read.damaged);
    this.#counters = ('counters' in read ? read.counters : null) ?? zeroCounters(new Date().toISOString());
    this.#write();
  }

  get current(): AgentCounters {
    return { ...this.#counters };
  }

  add(name: CounterName, by = 1): void {
    if (this.#closed || !(by > 0)) return;
    this.#counters[name] += by;
    if (this.#timer) return;
    this.#timer = setTimeout(() => {
      this.#timer = null;
      if (!this.#closed) this.#write();
    }, this.#options.delayMs ?? COUNTERS_WRITE_DELAY_MS);
    this.#timer.unref();
  }

  /** Writes the last counts now; later increments are ignored. */
  close(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    if (!this.#closed) this.#write();
    this.#closed = true;
  }

  #write(): void {
    const file = path.join(this.#stateDir, COUNTERS_FILE);
    this.#writeFile(file, () =>
      writeFileAtomic(file, `${JSON.stringify(this.#counters, null, 2)}\n`, { durable: false }),
    );
    const { metricsFile } = this.#options;
    if (!metricsFile) return;
    this.#writeFile(metricsFile, () =>
      writeFileAtomic(metricsFile, countersAsPrometheus(this.#counters), { durable: false, mode: 0o644 }),
    );
  }

  /** A failure is said once per reason until the file is written again (write-failures.ts). */
  #writeFile(file: string, write: () => void): void {
    try {
      write();
      this.#failures.written(file);
    } catch (error) {
      if (this.#failures.failed(file, error)) this.#options.onError?.(error);
    }
  }
}

import path from 'node:path';
import { maskDeep, type Masker } from '../exec/secret-masker.js';
import { writeFileAtomic } from '../state/files.js';
import { DAEMON_STATUS_FILE, type DaemonStatus } from './daemon-status.js';
import { WriteFailures } from './write-failures.js';

export type StatusPatch = Partial<Omit<DaemonStatus, 'pid' | 'startedAt' | 'version' | 'updatedAt'>>;

/** How long changes gather before status.json is rewritten. */
export const STATUS_WRITE_DELAY_MS = 100;

/**
 * Keeps `<state-dir>/status.json` (daemon-status.ts) current for the daemon: each change is
 * merged in and the file rewritten atomically, the changes of `delayMs` written once. The delay keeps the rewrite (a rename over
 * the old file, ~0.6 ms on ext4, which flushes the new data on a replace) off the way of a job
 * that has just arrived, and makes one write of a burst; the file is advisory. A write that fails
 * is said (`onError`) once per reason until one succeeds (write-failures.ts). Every secret value
 * `masker` knows is masked in what is written, as in the agent's log: `drover-agent status` prints
 * the file (a workflow file's problem repeats the value it found there).
 */
export class DaemonStatusWriter {
  #status: DaemonStatus;
  #timer: NodeJS.Timeout | null = null;
  #closed = false;
  readonly #stateDir: string;
  readonly #onError: (error: unknown) => void;
  readonly #delayMs: number;
  readonly #masker: () => Masker | null;
  readonly #failures = new WriteFailures();

  constructor(
    stateDir: string,
    initial: Omit<DaemonStatus, 'updatedAt'>,
    onError: (error: unknown) => void = () => {},
    delayMs = STATUS_WRITE_DELAY_MS,
    masker: () => Masker | null = () => null,
  ) {
    this.#stateDir = stateDir;
    this.#onError = onError;
    this.#delayMs = delayMs;
    this.#masker = masker;
    this.#status = { ...initial, updatedAt: new Date().toISOString() };
    this.#write();
  }

  get current(): DaemonStatus {
    return this.#status;
  }

  update(patch: StatusPatch): void {
    this.#status = { ...this.#status, ...patch };
    if (this.#timer || this.#closed) return;
    this.#timer = setTimeout(() => {
      this.#timer = null;
      if (!this.#closed) this.#write();
    }, this.#delayMs);
    this.#timer.unref();
  }

  /** Writes the last state now; later updates are ignored. */
  close(patch: StatusPatch = {}): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    this.#status = { ...this.#status, ...patch };
    this.#write();
    this.#closed = true;
  }

  #write(): void {
    this.#status = { ...this.#status, updatedAt: new Date().toISOString() };
    const file = path.join(this.#stateDir, DAEMON_STATUS_FILE);
    try {
      const mask = this.#masker();
      const shown = mask && mask.longest > 0 ? maskDeep(this.#status, mask) : this.#status;
      writeFileAtomic(file, `${JSON.stringify(shown, null, 2)}\n`, { durable: false });
      this.#failures.written(file);
    } catch (error) {
      if (this.#failures.failed(file, error)) this.#onError(error);
    }
  }
}

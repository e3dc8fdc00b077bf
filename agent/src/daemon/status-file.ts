import path from 'node:path';
import { DAEMON_STATUS_FILE, type DaemonStatus } from '../daemon-status.js';
import { writeFileAtomic } from '../state/files.js';

export type StatusPatch = Partial<Omit<DaemonStatus, 'pid' | 'startedAt' | 'version' | 'updatedAt'>>;

/**
 * Keeps `<state-dir>/status.json` current: each change is merged in and the file rewritten
 * atomically, changes of one event-loop turn being written once.
 */
export class StatusFile {
  #status: DaemonStatus;
  #scheduled = false;
  #closed = false;

  constructor(
    private readonly stateDir: string,
    initial: Omit<DaemonStatus, 'updatedAt'>,
    private readonly onError: (error: unknown) => void = () => {},
  ) {
    this.#status = { ...initial, updatedAt: new Date().toISOString() };
    this.#write();
  }

  get current(): DaemonStatus {
    return this.#status;
  }

  update(patch: StatusPatch): void {
    this.#status = { ...this.#status, ...patch };
    if (this.#scheduled || this.#closed) return;
    this.#scheduled = true;
    setImmediate(() => {
      this.#scheduled = false;
      if (!this.#closed) this.#write();
    });
  }

  /** Writes the last state now; later updates are ignored. */
  close(patch: StatusPatch = {}): void {
    this.#status = { ...this.#status, ...patch };
    this.#write();
    this.#closed = true;
  }

  #write(): void {
    this.#status = { ...this.#status, updatedAt: new Date().toISOString() };
    try {
      writeFileAtomic(path.join(this.stateDir, DAEMON_STATUS_FILE), `${JSON.stringify(this.#status, null, 2)}\n`, {
        durable: false,
      });
    } catch (error) {
      this.onError(error);
    }
  }
}

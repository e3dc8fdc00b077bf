import { formatBytes } from './format.js';
import { formatRate } from './download-speed.js';

/** Smaller downloads log no progress lines: they are over in a moment. */
export const PROGRESS_MIN_BYTES = 1_000_000;

/**
 * The progress lines of a download in the agent's log, one at each further tenth of the file:
 * `downloading artifact app 1.2.3: 40% (80 MB of 200 MB, 2.1 MB/s)`, the rate being the one since
 * the previous line (or since the connection began).
 */
export class DownloadProgress {
  readonly #label: string;
  readonly #size: number;
  readonly #log: (text: string) => void;
  #nextTenth = 1;
  #since = { at: 0, bytes: 0 };

  constructor(label: string, size: number, log: (text: string) => void) {
    this.#label = label;
    this.#size = size;
    this.#log = log;
  }

  /** A connection begins with `bytes` already on disk: the rate counts from here. */
  begin(bytes: number, now: number): void {
    this.#since = { at: now, bytes };
    this.#nextTenth = Math.max(this.#nextTenth, this.#tenths(bytes) + 1);
  }

  /** The download starts over from zero: its tenths are logged again. */
  reset(): void {
    this.#nextTenth = 1;
  }

  update(bytes: number, now: number): void {
    if (this.#size < PROGRESS_MIN_BYTES) return;
    const tenths = this.#tenths(bytes);
    if (tenths < this.#nextTenth) return;
    this.#nextTenth = tenths + 1;
    const seconds = (now - this.#since.at) / 1000;
    const rate = seconds > 0 ? (bytes - this.#since.bytes) / seconds : 0;
    this.#since = { at: now, bytes };
    this.#log(
      `downloading ${this.#label}: ${tenths * 10}% (${formatBytes(bytes)} of ${formatBytes(this.#size)}, ${formatRate(rate)})`,
    );
  }

  #tenths(bytes: number): number {
    return this.#size === 0 ? 10 : Math.floor((bytes * 10) / this.#size);
  }
}

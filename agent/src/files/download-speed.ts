import { formatBytes } from './format.js';

/** The window over which `--min-download-speed` is averaged, by default. */
export const DOWNLOAD_SPEED_WINDOW_MS = 60_000;

/**
 * The slow-retrieval defence of downloads: the bytes of one download counted as they arrive, and
 * their rate over the last `windowMs` compared with a minimum. A download younger than the window
 * is not judged; a minimum of 0 judges nothing.
 */
export class SpeedMeter {
  readonly #min: number;
  readonly #windowMs: number;
  readonly #started: number;
  /** (time, bytes received up to then), oldest first; one sample at or before the window's start is kept as its base. */
  readonly #samples: { at: number; total: number }[];
  #total = 0;

  constructor(minBytesPerSecond: number, windowMs: number, now: number) {
    this.#min = minBytesPerSecond;
    this.#windowMs = windowMs;
    this.#started = now;
    this.#samples = [{ at: now, total: 0 }];
  }

  add(bytes: number, now: number): void {
    this.#total += bytes;
    this.#samples.push({ at: now, total: this.#total });
    const from = now - this.#windowMs;
    while (this.#samples.length > 2 && this.#samples[1]!.at <= from) this.#samples.shift();
  }

  /** The rate over the window (bytes per second) when it is below the minimum; null otherwise. */
  tooSlow(now: number): number | null {
    if (this.#min <= 0 || now - this.#started < this.#windowMs) return null;
    const from = now - this.#windowMs;
    let base = 0;
    for (const sample of this.#samples) {
      if (sample.at > from) break;
      base = sample.total;
    }
    const rate = ((this.#total - base) * 1000) / this.#windowMs;
    return rate < this.#min ? rate : null;
  }

  /** Why the download was given up, naming both speeds. */
  describe(rate: number): string {
    return (
      `the download was too slow: ${formatRate(rate)} over the last ${formatWindow(this.#windowMs)}, ` +
      `below the minimum of ${formatRate(this.#min)} (--min-download-speed)`
    );
  }
}

/** `2.1 MB/s`, `312 B/s`. */
export const formatRate = (bytesPerSecond: number): string => `${formatBytes(Math.round(bytesPerSecond))}/s`;

const formatWindow = (ms: number): string => (ms % 1000 === 0 ? `${ms / 1000} s` : `${(ms / 1000).toFixed(1)} s`);

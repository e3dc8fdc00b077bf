import type { JobLogLine } from '@drover/shared';
import type { OutputPressure } from '../exec/run-step.js';
import type { JobLine } from '../exec/run-workflow.js';
import type { Report } from '../outbox/report.js';

/** The coordinator's limit on one log line. */
export const MAX_LOG_TEXT = 16_384;
/**
 * The most bytes of lines (as JSON) in one batch: far inside the coordinator's 1 MiB body limit
 * even when every line is 16 KiB of text that JSON escapes six-fold.
 */
export const MAX_BATCH_BYTES = 256 * 1024;

export interface LogShipperOptions {
  /** Send a batch when this many lines are waiting... */
  maxLines?: number;
  /** ...or this long after the first one arrived. */
  intervalMs?: number;
}

/**
 * Batches sent and not yet answered (or stored in the outbox) past which the steps' output waits
 * (OutputPressure): with 256 KiB batches, 2 MiB of lines on their way at most, in memory.
 */
export const MAX_BATCHES_ON_THEIR_WAY = 8;
/** ...and at or below which it is read again. */
const RESUME_AT_BATCHES = 2;

/**
 * Numbers a job's log lines from 1 (so that a resend is harmless) and sends them in batches
 * while the job runs: every ~200 ms, or at once when 100 lines or 256 KiB are waiting. A line
 * longer than the coordinator's limit is sent as several lines. Backlogged while too many batches
 * are on their way: the step's output is then read no further (run-step.ts) until they went.
 */
export class LogShipper implements OutputPressure {
  #seq = 0;
  #onTheirWay = 0;
  #waiters: (() => void)[] = [];
  #batch: JobLogLine[] = [];
  #batchBytes = 0;
  #timer: NodeJS.Timeout | null = null;
  readonly #maxLines: number;
  readonly #intervalMs: number;
  readonly #jobId: string;
  readonly #send: (report: Report) => unknown;

  /** `send` may return a promise: the batch is on its way until it settles. */
  constructor(jobId: string, send: (report: Report) => unknown, options: LogShipperOptions = {}) {
    this.#jobId = jobId;
    this.#send = send;
    this.#maxLines = options.maxLines ?? 100;
    this.#intervalMs = options.intervalMs ?? 200;
  }

  add(line: JobLine): void {
    const at = new Date().toISOString();
    const pieces = line.text.length <= MAX_LOG_TEXT ? [line.text] : chunk(line.text, MAX_LOG_TEXT);
    for (const text of pieces) {
      const bytes = Buffer.byteLength(JSON.stringify(text)) + LINE_OVERHEAD_BYTES;
      if (this.#batchBytes + bytes > MAX_BATCH_BYTES) this.flush();
      this.#batch.push({ seq: ++this.#seq, at, stream: line.stream, step: line.step, text });
      this.#batchBytes += bytes;
      if (this.#batch.length >= this.#maxLines) this.flush();
    }
    if (this.#batch.length > 0 && !this.#timer) {
      this.#timer = setTimeout(() => this.flush(), this.#intervalMs);
      this.#timer.unref();
    }
  }

  /** Sends what is waiting now. */
  flush(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    if (this.#batch.length === 0) return;
    const lines = this.#batch;
    this.#batch = [];
    this.#batchBytes = 0;
    const sent = this.#send({ kind: 'logs', jobId: this.#jobId, body: { lines } });
    if (!(sent instanceof Promise)) return;
    this.#onTheirWay += 1;
    const settled = () => {
      this.#onTheirWay -= 1;
      if (this.#onTheirWay <= RESUME_AT_BATCHES) for (const resume of this.#waiters.splice(0)) resume();
    };
    sent.then(settled, settled);
  }

  get backlogged(): boolean {
    return this.#onTheirWay >= MAX_BATCHES_ON_THEIR_WAY;
  }

  drained(): Promise<void> {
    if (this.#onTheirWay <= RESUME_AT_BATCHES) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  get linesSent(): number {
    return this.#seq;
  }
}

/** The JSON around a line's text: `{"seq":..,"at":"..","stream":"stdout","step":..,"text":}`. */
const LINE_OVERHEAD_BYTES = 96;

/** Pieces of at most `size` UTF-16 units, never cutting an emoji (a surrogate pair) in two. */
function chunk(text: string, size: number): string[] {
  const pieces: string[] = [];
  for (let i = 0; i < text.length;) {
    let end = Math.min(i + size, text.length);
    if (end < text.length && end - i > 1 && isHighSurrogate(text.charCodeAt(end - 1))) end--;
    pieces.push(text.slice(i, end));
    i = end;
  }
  return pieces;
}

const isHighSurrogate = (code: number): boolean => code >= 0xd800 && code <= 0xdbff;

import { createHash, type Hash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Readable } from 'node:stream';
import type { HttpResponse } from '../http/request.js';
import { describeFileError } from '../state/files.js';
import { checkFreeSpace, type StatfsFn } from './disk-space.js';
import { DownloadProgress } from './download-progress.js';
import { DOWNLOAD_SPEED_WINDOW_MS, SpeedMeter } from './download-speed.js';
import { formatBytes } from './format.js';
import { discardOtherPartials, PartialDownload } from './partial-download.js';
import { presignedRequest } from './presigned-request.js';
import {
  abortError,
  answerReason,
  discardBody,
  kindOfStatus,
  networkFailure,
  readSmallBody,
  TransferError,
} from './transfer-error.js';

/** How downloads are made, the same for artifacts and input files (the agent's run options). */
export interface DownloadSettings {
  /**
   * Where partial downloads and their records are kept for a later resume (`<state-dir>/downloads`,
   * on the same file system as the jobs); absent: a temporary partial beside the target, resumed
   * only by this download's own attempts and removed when it ends.
   */
  partialsDir?: string;
  /** `--min-download-speed`: bytes per second averaged over `speedWindowMs`; 0: no minimum. */
  minSpeed?: number;
  /** Default 60 s. */
  speedWindowMs?: number;
  /** The file system's free space (default `fs.promises.statfs`; tests give their own). */
  statfs?: StatfsFn;
}

export interface DownloadRequest extends DownloadSettings {
  /** The final path; nothing is there unless every byte arrived and matched. */
  target: string;
  expectedSize: number;
  /** Lowercase hex SHA-256. */
  expectedSha256: string;
  /** What is downloaded, in the progress lines: `artifact app 1.2.3`, ``input file `bundle` ``. */
  label: string;
  /** What the download is for (`artifact:<application id>`): the partial of an older file for it is removed. */
  slot?: string;
  signal: AbortSignal;
  /** A line of the agent's log (and the job's). */
  log(text: string): void;
}

/** Thrown into the body stream when the connection is slower than the minimum. */
class TooSlow extends Error {
  constructor(readonly why: string) {
    super(why);
  }
}

const CHECK_EVERY_MS = 1000;

/**
 * A download of a presigned URL into `target` that survives the edge (docs/agent.md, "Downloads"):
 * each `attempt` asks for the bytes the partial file does not have yet (`Range: bytes=<have>-`,
 * with `If-Range` when the server gave a strong ETag) and appends them, so a dropped link, a
 * refused (expired) URL replaced by a fresh one, or an agent restart costs only the missing bytes.
 * The free disk space is checked against what is missing before each request, a download
 * slower than the minimum speed over the window (from its first connection on, pauses between
 * connections included) is given up, and a progress line is logged at each tenth. Only a file whose size and SHA-256 match, checked after its last byte, is renamed
 * to the target; a mismatch removes the partial (once started over from zero when earlier bytes
 * were resumed: they may be the ones at fault).
 *
 * Failures are TransferErrors: `retry` (the network, a 5xx, a connection closed early, an answer
 * of another length than the file's: a proxy or captive portal in the way), `refresh` (a refused
 * URL), `final` (the complete file does not match, not enough disk space, too slow, another
 * refusal), or TransferAborted. The partial stays for the next download of the same bytes,
 * unless its content was wrong.
 */
export class ResumableDownload {
  readonly #req: DownloadRequest;
  readonly #partial: PartialDownload;
  readonly #dir: string;
  readonly #progress: DownloadProgress;
  #hash: Hash = createHash('sha256');
  /** The bytes in the partial file, all of them hashed into #hash. */
  #have = 0;
  #opened = false;
  #etag: string | null = null;
  /** Bytes kept from before the current connection are part of the file (resumed). */
  #resumed = false;
  #startedOver = false;
  /**
   * The most bytes the partial has held, kept when it starts over: an attempt is progress only
   * when it gets beyond it. Bytes fetched again after a start over move nothing, and a server
   * that never resumes and always drops the connection at the same point would else be retried
   * for ever.
   */
  #highWater = 0;
  #progressed = false;
  /** Why the server did not resume this attempt's request (it started over), else null. */
  #notResumed: string | null = null;
  #done = false;
  #meter: SpeedMeter | undefined;

  constructor(req: DownloadRequest) {
    this.#req = { ...req, expectedSha256: req.expectedSha256.toLowerCase() };
    this.#dir = req.partialsDir ?? path.dirname(req.target);
    this.#partial = PartialDownload.claim(this.#dir, this.#req.expectedSha256, req.partialsDir !== undefined);
    this.#progress = new DownloadProgress(req.label, req.expectedSize, req.log);
  }

  /** The bytes on disk so far. */
  get have(): number {
    return this.#have;
  }

  /** Whether the last attempt got further than any before (its failure does not count against the attempts). */
  progressed(): boolean {
    return this.#progressed;
  }

  /**
   * One request from where the bytes on disk end; resolves once the file is verified and in place
   * at `target` (default: the request's; a fresh answer of the coordinator may name the file anew).
   */
  async attempt(url: string, target = this.#req.target): Promise<void> {
    this.#progressed = false;
    this.#notResumed = null;
    if (this.#done) return;
    if (!this.#opened) await this.#open(url);
    try {
      await checkFreeSpace(this.#dir, this.#req.expectedSize - this.#have, this.#req.statfs);
    } catch (error) {
      if (this.#have === 0) {
        // Nothing worth keeping: no empty partial is left behind.
        this.#partial.discard();
        this.#opened = false;
      }
      throw error;
    }
    if (this.#have < this.#req.expectedSize) {
      // Opened before the request: once the answer is there, its body is read without a pause.
      const handle = await fs.promises.open(this.#partial.part, 'r+');
      try {
        let answer = await this.#request(url);
        if (answer === 'start over') answer = await this.#request(url);
        if (answer === 'start over') throw new TransferError('retry', 'the server did not resume the download');
        await this.#receive(answer, handle);
      } finally {
        await handle.close();
      }
      if (this.#have < this.#req.expectedSize) {
        // Stopped by the agent (its shutdown) as the body ended: not the network's doing.
        if (this.#req.signal.aborted) throw abortError(this.#req.signal);
        throw this.#closedEarly(
          new TransferError(
            'retry',
            `the connection closed after ${formatBytes(this.#have)} of ${formatBytes(this.#req.expectedSize)}`,
          ),
        );
      }
    }
    await this.#finish(target);
  }

  /** Ends the download: the partial is kept for a later one (unless it was temporary or wrong). */
  close(): void {
    this.#partial.release();
  }

  /** Takes up a partial left by an earlier download of the same bytes, or starts a new one. */
  async #open(url: string): Promise<void> {
    const { expectedSha256: sha256, expectedSize: size } = this.#req;
    if (this.#req.slot && !this.#partial.temporary) {
      discardOtherPartials(this.#dir, this.#req.slot, path.basename(this.#partial.part, '.part'));
    }
    const record = this.#partial.load();
    const onDisk = this.#partial.size();
    if (record && record.sha256 === sha256 && record.size === size && onDisk > 0 && onDisk <= size) {
      this.#etag = record.etag;
      await this.#hashPartial(onDisk);
      this.#resumed = true;
      this.#req.log(
        `resuming the download of ${this.#req.label} at ${formatBytes(onDisk)} of ${formatBytes(size)} ` +
          `(${Math.floor((onDisk * 100) / size)}%), kept from an earlier attempt`,
      );
    } else {
      this.#partial.discard();
      fs.writeFileSync(this.#partial.part, '', { mode: 0o600 });
      this.#save(url);
    }
    this.#highWater = Math.max(this.#highWater, this.#have);
    this.#opened = true;
  }

  /** Hashes the first `bytes` of the partial (after a restart: the hash of the earlier bytes is not kept). */
  async #hashPartial(bytes: number): Promise<void> {
    const stream = fs.createReadStream(this.#partial.part, { start: 0, end: bytes - 1, highWaterMark: 1 << 20 });
    for await (const chunk of stream as AsyncIterable<Buffer>) this.#hash.update(chunk);
    this.#have = bytes;
  }

  #save(url: string): void {
    if (this.#partial.temporary) return;
    const where = URL.parse(url);
    this.#partial.save({
      version: 1,
      sha256: this.#req.expectedSha256,
      size: this.#req.expectedSize,
      url: where ? `${where.origin}${where.pathname}` : '',
      etag: this.#etag,
      slot: this.#req.slot ?? null,
      startedAt: new Date().toISOString(),
    });
  }

  /** Empties the partial: the next bytes are the file's first. */
  #startOver(): void {
    fs.truncateSync(this.#partial.part, 0);
    this.#progress.reset();
    this.#hash = createHash('sha256');
    this.#have = 0;
    this.#resumed = false;
    this.#etag = null;
  }

  /**
   * Asks for the missing bytes. Resolves with an answer whose body continues the partial (a 206
   * for exactly the rest, or a 200 after the partial was emptied), or `start over` when the server
   * will not resume this partial (416, another range or total size, another ETag): it was emptied.
   */
  async #request(url: string): Promise<HttpResponse | 'start over'> {
    const from = this.#have;
    const size = this.#req.expectedSize;
    const headers: Record<string, string> = {};
    if (from > 0) {
      headers.range = `bytes=${from}-`;
      if (this.#etag) headers['if-range'] = this.#etag;
      this.#req.log(`resuming the download of ${this.#req.label} at ${formatBytes(from)} of ${formatBytes(size)}`);
    }
    const answer = await presignedRequest(
      'the download',
      { url, signal: this.#req.signal },
      { method: 'GET', headers },
    );
    const etag = strongEtag(answer.headers.etag);
    const length = answer.headers['content-length'];
    if (answer.statusCode === 200) {
      if (length !== undefined && Number(length) !== size) {
        throw wrongAnswer(answer, `and announced ${length} bytes, but the file has ${size}`);
      }
      if (from > 0) {
        this.#req.log(
          `the server sent the whole file instead of the rest: the download of ${this.#req.label} starts over`,
        );
        this.#notResumed =
          this.#etag !== null && etag !== null && etag !== this.#etag ? 'its ETag changes' : 'it ignores Range';
        this.#startOver();
      }
      this.#etag = etag;
      this.#save(url);
      return answer;
    }
    if (answer.statusCode === 206 && from > 0) {
      const range = contentRange(answer.headers['content-range']);
      if (range !== null && range.total !== size) {
        throw wrongAnswer(answer, `for a file of ${range.total} bytes, but the file has ${size}`);
      }
      if (length !== undefined && Number(length) !== size - from) {
        throw wrongAnswer(answer, `and announced ${length} bytes, but the rest of the file has ${size - from}`);
      }
      const otherRange = range === null || range.start !== from || range.end !== size - 1;
      const otherEtag = this.#etag !== null && etag !== null && etag !== this.#etag;
      if (!otherRange && !otherEtag) return answer;
      const changed = otherRange
        ? `it answered the range ${String(answer.headers['content-range'])}`
        : 'the file changed (another ETag)';
      discardBody(answer.body);
      this.#req.log(`the server cannot resume the download of ${this.#req.label} (${changed}): it starts over`);
      this.#notResumed = otherRange ? changed : 'its ETag changes';
      this.#startOver();
      return 'start over';
    }
    if (answer.statusCode === 416 && from > 0) {
      discardBody(answer.body);
      this.#req.log(`the server refused to resume the download of ${this.#req.label} (HTTP 416): it starts over`);
      this.#notResumed = 'it refuses Range with HTTP 416';
      this.#startOver();
      return 'start over';
    }
    const text = await readSmallBody(answer.body);
    throw new TransferError(
      kindOfStatus(answer.statusCode),
      `the download was refused (${answerReason(answer.statusCode, text)})`,
    );
  }

  /**
   * Appends the answer's bytes to the partial, hashing them, watching the speed and logging
   * progress. The body flows into a queue as it arrives (paused only while 1 MiB waits for the
   * disk), so the bytes that came before a dropped connection are all kept.
   */
  async #receive(answer: HttpResponse, handle: fs.promises.FileHandle): Promise<void> {
    const { signal } = this.#req;
    if (this.#have > 0) this.#resumed = true;
    // One meter for the whole download, the pauses between its connections included: a server
    // that drops the connection after every few bytes is as slow as one that trickles them.
    this.#meter ??= new SpeedMeter(
      this.#req.minSpeed ?? 0,
      this.#req.speedWindowMs ?? DOWNLOAD_SPEED_WINDOW_MS,
      performance.now(),
    );
    const meter = this.#meter;
    const watch = () => {
      const rate = meter.tooSlow(performance.now());
      if (rate !== null) answer.body.destroy(new TooSlow(meter.describe(rate)));
    };
    // Between chunks too: a connection that sends nothing for a while is judged without waiting for one.
    const timer =
      (this.#req.minSpeed ?? 0) > 0
        ? setInterval(watch, Math.max(50, Math.min(CHECK_EVERY_MS, (this.#req.speedWindowMs ?? CHECK_EVERY_MS) / 4)))
        : undefined;
    this.#progress.begin(this.#have, performance.now());
    try {
      await drain(answer.body, async (chunk) => {
        await this.#append(handle, chunk);
        const now = performance.now();
        meter.add(chunk.length, now);
        this.#progress.update(this.#have, now);
        watch();
      });
    } catch (error) {
      if (error instanceof TransferError) throw error;
      if (error instanceof TooSlow) throw new TransferError('final', error.why);
      if (signal.aborted) throw abortError(signal);
      const code = (error as NodeJS.ErrnoException).code;
      if (code && /^E[A-Z]+$/.test(code) && (error as NodeJS.ErrnoException).syscall) {
        // In the words of the agent's other file errors; the partial keeps what was written, for
        // the next download once there is room again.
        const why = describeFileError(error, this.#dir);
        throw new TransferError('final', `cannot write ${this.#partial.part}: ${why}`, { cause: error });
      }
      throw this.#closedEarly(networkFailure('the download', error, signal));
    } finally {
      clearInterval(timer);
      discardBody(answer.body);
    }
  }

  /**
   * A connection that closed before the last byte, said for what it is when this attempt's
   * request was not resumed (it started over): such a server cannot deliver more than it sends
   * in one connection, and a technician should hear that rather than of a dropped link.
   */
  #closedEarly(error: Error): Error {
    if (this.#notResumed === null || !(error instanceof TransferError) || error.kind !== 'retry') return error;
    return new TransferError(
      'retry',
      `the server does not resume downloads (${this.#notResumed}) and drops the connection after ` +
        `${formatBytes(this.#have)} of ${formatBytes(this.#req.expectedSize)}`,
      { cause: error },
    );
  }

  /** Writes the next bytes of the file at their place and hashes them: #hash always covers exactly the bytes on disk. */
  async #append(handle: fs.promises.FileHandle, chunk: Buffer): Promise<void> {
    const size = this.#req.expectedSize;
    if (this.#have + chunk.length > size) {
      // An answer without a length that goes on past the file (a proxy's page, another file): a
      // wrong answer, tried again, not a wrong artifact. Its bytes are in the partial, which is
      // emptied (such an answer is almost always a 200, which had started it over anyway).
      this.#startOver();
      throw new TransferError(
        'retry',
        `the server (or a proxy on the way) sent more than the ${size} bytes of the file`,
      );
    }
    // A disk that fills up takes part of a chunk (a short write, not an error: the next write is
    // the ENOSPC): the rest is written in its turn, and only the bytes on disk are counted and
    // hashed, or a write after room came back would leave a hole the in-memory hash cannot see.
    let offset = 0;
    while (offset < chunk.length) {
      const { bytesWritten } = await handle.write(chunk, offset, chunk.length - offset, this.#have);
      if (bytesWritten === 0) throw Object.assign(new Error('nothing written'), { code: 'ENOSPC', syscall: 'write' });
      this.#hash.update(chunk.subarray(offset, offset + bytesWritten));
      this.#have += bytesWritten;
      offset += bytesWritten;
    }
    if (this.#have > this.#highWater) {
      this.#highWater = this.#have;
      this.#progressed = true;
    }
  }

  /** Every byte is on disk: checks size and SHA-256, then renames the file into place. */
  async #finish(target: string): Promise<void> {
    const { expectedSha256: expected, expectedSize: size } = this.#req;
    const got = this.#hash.copy().digest('hex');
    const onDisk = this.#partial.size();
    if (got !== expected || onDisk !== size) {
      const resumed = this.#resumed && !this.#startedOver;
      this.#partial.discard();
      this.#progress.reset();
      this.#opened = false;
      this.#hash = createHash('sha256');
      this.#have = 0;
      this.#etag = null;
      this.#resumed = false;
      // Started over on purpose, once: the bytes fetched again are progress.
      this.#highWater = 0;
      const what =
        onDisk !== size
          ? `the download has ${onDisk} bytes, ${size} were expected`
          : `the download does not match its checksum: expected SHA-256 ${expected}, got ${got}`;
      if (resumed) {
        // The earlier bytes may be the wrong ones (a power cut, a file changed without an ETag).
        this.#startedOver = true;
        throw new TransferError('retry', `${what}; it was resumed, so it starts over from zero`);
      }
      throw new TransferError('final', what, { mismatch: true });
    }
    try {
      fs.renameSync(this.#partial.part, target);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EXDEV') throw error;
      fs.copyFileSync(this.#partial.part, target);
    }
    this.#partial.discard();
    this.#partial.release();
    this.#done = true;
  }
}

/** Bytes waiting for the disk above which the body is paused. */
const QUEUE_HIGH = 1 << 20;

/**
 * Hands each chunk of `body` to `write`, one at a time, in order. Chunks that arrived before the
 * body failed (a dropped connection) are still written; then the body's error is thrown. A
 * failure of `write` stops the body and is thrown.
 */
function drain(body: Readable, write: (chunk: Buffer) => Promise<void>): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (body.destroyed) {
      // Nothing can be read from it any more (it must be read at once, in the same turn as its headers).
      reject(body.errored ?? new Error('the connection closed before the body was read'));
      return;
    }
    const queue: Buffer[] = [];
    let queued = 0;
    let writing = false;
    let ended = false;
    let bodyError: unknown = null;
    let failed = false;
    const settle = () => {
      if (failed || writing || queue.length > 0 || !ended) return;
      if (bodyError !== null) reject(bodyError);
      else resolve();
    };
    const pump = async () => {
      if (writing || failed) return;
      writing = true;
      try {
        while (queue.length > 0) {
          const chunk = queue.shift()!;
          queued -= chunk.length;
          if (queued < QUEUE_HIGH / 2 && body.isPaused() && !ended) body.resume();
          await write(chunk);
        }
      } catch (error) {
        failed = true;
        body.destroy();
        reject(error);
        return;
      } finally {
        writing = false;
      }
      settle();
    };
    body.on('data', (chunk: Buffer) => {
      if (failed) return;
      queue.push(chunk);
      queued += chunk.length;
      if (queued > QUEUE_HIGH) body.pause();
      void pump();
    });
    body.once('end', () => {
      ended = true;
      settle();
    });
    body.once('error', (error) => {
      bodyError = error;
      ended = true;
      settle();
    });
    body.once('close', () => {
      // Closed without 'end' nor 'error' (the connection dropped): what arrived is kept.
      if (!ended) {
        ended = true;
        settle();
      }
    });
  });
}

/**
 * An answer whose length is not the file's (or its rest's): a proxy or captive portal in the way,
 * or a broken server, not a wrong artifact. The partial is kept and the download tried again.
 */
function wrongAnswer(answer: HttpResponse, what: string): TransferError {
  discardBody(answer.body);
  return new TransferError('retry', `the server (or a proxy on the way) answered HTTP ${answer.statusCode} ${what}`);
}

/** A strong ETag (a weak one, `W/"…"`, cannot validate a range). */
function strongEtag(value: string | string[] | undefined): string | null {
  return typeof value === 'string' && value.startsWith('"') ? value : null;
}

/** `Content-Range: bytes <start>-<end>/<total>`. */
function contentRange(value: string | string[] | undefined): { start: number; end: number; total: number } | null {
  const match = /^bytes (\d+)-(\d+)\/(\d+)$/i.exec(String(value ?? '').trim());
  return match ? { start: Number(match[1]), end: Number(match[2]), total: Number(match[3]) } : null;
}

import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Transform, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { presignedRequest, type PresignedTarget } from './presigned-request.js';
import {
  abortError,
  answerReason,
  discardBody,
  kindOfStatus,
  networkFailure,
  readSmallBody,
  TransferError,
} from './transfer-error.js';

export interface DownloadRequest extends PresignedTarget {
  /** The final path; the bytes go to a temporary file beside it, renamed only once verified. */
  target: string;
  expectedSize: number;
  /** Lowercase hex SHA-256. */
  expectedSha256: string;
}

/**
 * Downloads `url` (a presigned GET) into `target`, streaming: the size is checked as the bytes
 * arrive (more than expected stops the transfer at once) and the SHA-256 computed on the way.
 * Only a complete, matching download is renamed into place; whatever happens, no partial file is
 * left. Failures are TransferErrors (`refresh` for a refused URL, `retry` for the network or a
 * 5xx, `final` for a mismatch or another refusal) or TransferAborted.
 */
export async function downloadFile(req: DownloadRequest): Promise<void> {
  const answer = await presignedRequest('the download', req, { method: 'GET' });
  const temp = path.join(path.dirname(req.target), `.download-${randomBytes(6).toString('hex')}.part`);
  if (answer.statusCode !== 200) {
    const text = await readSmallBody(answer.body);
    throw new TransferError(
      kindOfStatus(answer.statusCode),
      `the download was refused (${answerReason(answer.statusCode, text)})`,
    );
  }
  const announced = Number(answer.headers['content-length']);
  if (Number.isFinite(announced) && announced !== req.expectedSize) {
    discardBody(answer.body);
    throw new TransferError('final', `the server announced ${announced} bytes, but the file has ${req.expectedSize}`, {
      mismatch: true,
    });
  }
  const check = new VerifyingStream(req.expectedSize);
  try {
    await pipeline(answer.body, check, fs.createWriteStream(temp, { flags: 'wx', mode: 0o600 }), {
      signal: req.signal,
    });
    if (check.size !== req.expectedSize) {
      throw new TransferError('final', `the download has ${check.size} bytes, ${req.expectedSize} were expected`, {
        mismatch: true,
      });
    }
    const sha256 = check.digest();
    if (sha256 !== req.expectedSha256.toLowerCase()) {
      throw new TransferError(
        'final',
        `the download does not match its checksum: expected SHA-256 ${req.expectedSha256.toLowerCase()}, got ${sha256}`,
        { mismatch: true },
      );
    }
    fs.renameSync(temp, req.target);
  } catch (error) {
    fs.rmSync(temp, { force: true });
    if (error instanceof TransferError) throw error;
    if (req.signal.aborted) throw abortError(req.signal);
    if ((error as Error).name === 'TooLarge')
      throw new TransferError('final', (error as Error).message, { mismatch: true });
    const code = (error as NodeJS.ErrnoException).code;
    if (code && /^E[A-Z]+$/.test(code) && (error as NodeJS.ErrnoException).syscall) {
      throw new TransferError('final', `cannot write ${req.target}: ${code}`, { cause: error });
    }
    throw networkFailure('the download', error, req.signal);
  }
}

/** Passes bytes through, counting and hashing them; more than `limit` bytes is an error. */
class VerifyingStream extends Transform {
  size = 0;
  readonly #hash = createHash('sha256');
  readonly #limit: number;

  constructor(limit: number) {
    super();
    this.#limit = limit;
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    this.size += chunk.length;
    if (this.size > this.#limit) {
      const error = new Error(`the download is larger than the ${this.#limit} bytes expected`);
      error.name = 'TooLarge';
      done(error);
      return;
    }
    this.#hash.update(chunk);
    done(null, chunk);
  }

  digest(): string {
    return this.#hash.digest('hex');
  }
}

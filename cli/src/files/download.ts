import fs from 'node:fs';
import path from 'node:path';
import { Transform, Writable, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  Backoff,
  TransferError,
  answerReason,
  discardBody,
  formatBytes,
  kindOfStatus,
  networkFailure,
  pause,
  presignedRequest,
  readSmallBody,
  safeFilename,
} from '@drover/agent/client';
import type { Schema } from '@drover/shared/api';
import type { Caller } from '../callers.js';
import { CliError, CliExit, Interrupted } from '../errors.js';
import { EXIT } from '../exit-codes.js';
import { progressBar, type Progress } from '../output/progress.js';
import type { Runtime } from '../runtime.js';
import { RunningHash } from './running-hash.js';
import { filesPath, sha256OfEtag, type StoredFile } from './stored-file.js';
import { transferFailure } from './transfer-failure.js';

/** Attempts in a row that move no byte before the download gives up. */
const ATTEMPTS_WITHOUT_PROGRESS = 5;

/** `-o -`: the bytes go to standard output. */
export const STANDARD_OUTPUT = '-';

export interface DownloadOptions {
  fileId: string;
  /**
   * A file to write, or an existing directory to write into (default: the file's name, here);
   * `-` for standard output.
   */
  output?: string;
  /** A SHA-256 the bytes must have (lowercase or uppercase hex). */
  sha256?: string;
  /** Without `output`: replace a file of the stored file's name in the working directory. */
  force?: boolean;
}

export interface Downloaded {
  file: StoredFile;
  /** The file written, or `-` (standard output). */
  target: string;
  sha256: string;
  /** Where this run started: the size of the partial download it found (0: from the start). */
  resumedFrom: number;
  /** The SHA-256 the storage recorded for the file (its ETag), when it gives one: it matched. */
  recordedSha256: string | null;
}

/**
 * Downloads a stored file through its presigned URL into `<target>.<file id>.part` (partPathOf), renamed to
 * the target once whole and verified: its size is the recorded one, its SHA-256 the one the
 * storage recorded (the local backend's ETag) and the one given with `--sha256`. The bytes are
 * streamed to disk (memory does not grow with the file). A transfer that stops (network, an
 * expired URL) goes on where it stopped with an HTTP range request, and so does the next run of
 * the same download after an interruption: the part file is kept for it.
 */
export async function downloadStoredFile(rt: Runtime, caller: Caller, options: DownloadOptions): Promise<Downloaded> {
  const expected = options.sha256 === undefined ? null : checkedSha256(options.sha256);
  if (options.output === STANDARD_OUTPUT) return streamStoredFile(rt, caller, options.fileId, expected);
  checkOutputDirectory(rt.cwd, options.output);
  const filePath = `${await filesPath(caller)}/${encodeURIComponent(options.fileId)}`;
  const file = await caller.api.get<StoredFile>(filePath);
  const target = targetPath(rt.cwd, options.output, file);
  checkReplaceable(target, options.output === undefined ? path.basename(target) : target);
  // The name is the uploader's choice: never let it replace a file here (`.npmrc`, `Makefile`)
  // unless asked. An explicit -o names what to replace.
  if (options.output === undefined && !options.force && fs.lstatSync(target, { throwIfNoEntry: false })) {
    throw new CliError(`${path.basename(target)} exists here; pass -o <path> or --force to replace it`);
  }
  const part = partPathOf(target, file.id);
  const freshUrl = async () => (await caller.api.get<Schema<'DownloadUrl'>>(`${filePath}/download-url`)).downloadUrl;
  let url = await freshUrl();
  const resumedFrom = partSize(part, file.size);
  if (resumedFrom > 0) {
    rt.err(`drover: resuming the download of ${file.id} at ${formatBytes(resumedFrom)} of ${formatBytes(file.size)}\n`);
  }
  const hash = new RunningHash();
  const progress = progressBar(rt, `Downloading ${path.basename(target)}`, file.size);
  const backoff = new Backoff({ baseMs: 500, capMs: 5000 });
  let recorded: string | null = null;
  try {
    for (let failures = 0; ;) {
      const offset = partSize(part, file.size);
      try {
        recorded =
          (await fetchRange({ url, part, offset, total: file.size, hash, progress, signal: rt.signal })) ?? recorded;
        break;
      } catch (error) {
        if (!(error instanceof TransferError) || error.kind === 'final') throw error;
        failures = partSize(part, file.size) > offset ? 1 : failures + 1;
        if (failures >= ATTEMPTS_WITHOUT_PROGRESS) throw error;
        rt.err(`drover: ${error.message}; going on from ${formatBytes(partSize(part, file.size))}\n`);
        if (error.kind === 'refresh') url = await freshUrl();
        else await pause(backoff.next(), rt.signal).catch(() => Promise.reject(new Interrupted()));
      }
    }
  } catch (error) {
    throw transferFailure(error);
  } finally {
    progress.done();
  }
  await hash.catchUp(part, file.size);
  const sha256 = hash.digest();
  const mismatch = digestMismatch(file.id, sha256, recorded, expected);
  if (mismatch !== null) {
    fs.rmSync(part, { force: true });
    throw new CliError(`${mismatch}; removed it`);
  }
  fs.renameSync(part, target);
  return { file, target, sha256, resumedFrom, recordedSha256: recorded };
}

/** Why the downloaded bytes are not the file: the SHA-256 the storage recorded, or the one given, differs; null when none does. */
function digestMismatch(
  fileId: string,
  sha256: string,
  recorded: string | null,
  expected: string | null,
): string | null {
  for (const [want, whose] of [
    [recorded, 'the one the storage recorded'],
    [expected, 'the one given with --sha256'],
  ] as const) {
    if (want !== null && want !== sha256)
      return `the download of ${fileId} has the SHA-256 ${sha256}, not ${want} (${whose})`;
  }
  return null;
}

/**
 * `-o -`: the stored file's bytes streamed to standard output (`rt.outBytes`), hashed on the way
 * and checked as a download to a file is, once they were all written. Nothing else goes there.
 * No part file and no resume: a transfer that fails before its first byte is tried again as a
 * download to a file is, one that stops after it ends the command (the bytes written cannot be
 * asked again from where they stopped without a file to hold them). A checksum that does not match
 * fails the command, but what was written cannot be taken back: the message says so.
 */
async function streamStoredFile(
  rt: Runtime,
  caller: Caller,
  fileId: string,
  expected: string | null,
): Promise<Downloaded> {
  const filePath = `${await filesPath(caller)}/${encodeURIComponent(fileId)}`;
  const file = await caller.api.get<StoredFile>(filePath);
  const freshUrl = async () => (await caller.api.get<Schema<'DownloadUrl'>>(`${filePath}/download-url`)).downloadUrl;
  let url = await freshUrl();
  const hash = new RunningHash();
  const progress = progressBar(rt, `Downloading ${safeFilename(file.filename, file.id)}`, file.size);
  const backoff = new Backoff({ baseMs: 500, capMs: 5000 });
  let recorded: string | null = null;
  try {
    for (let failures = 0; ;) {
      const streamed = { bytes: 0 };
      try {
        recorded = await fetchToStream(
          { url, total: file.size, hash, progress, signal: rt.signal },
          rt.outBytes,
          streamed,
        );
        break;
      } catch (error) {
        if (!(error instanceof TransferError) || error.kind === 'final') throw error;
        if (streamed.bytes > 0) {
          throw new TransferError(
            'final',
            `${error.message}, after ${formatBytes(streamed.bytes)} were written to standard output: ` +
              'a download to standard output cannot go on where it stopped; run it again',
          );
        }
        if (++failures >= ATTEMPTS_WITHOUT_PROGRESS) throw error;
        rt.err(`drover: ${error.message}; trying again\n`);
        if (error.kind === 'refresh') url = await freshUrl();
        else await pause(backoff.next(), rt.signal).catch(() => Promise.reject(new Interrupted()));
      }
    }
  } catch (error) {
    throw transferFailure(error);
  } finally {
    progress.done();
  }
  const sha256 = hash.digest();
  const mismatch = digestMismatch(file.id, sha256, recorded, expected);
  if (mismatch !== null) {
    throw new CliError(
      `${mismatch}; its bytes were already written to standard output, which cannot take them back: do not use them`,
    );
  }
  return { file, target: STANDARD_OUTPUT, sha256, resumedFrom: 0, recordedSha256: recorded };
}

/**
 * Asks for the whole file and writes it into `out` (standard output), hashing it on the way and
 * counting in `streamed` the bytes passed on. Resolves with the SHA-256 the answer's ETag carries,
 * if any; throws TransferErrors as `fetchRange` does, and CliExit(141) when the reader of
 * standard output went away (EPIPE), quietly as anywhere else.
 */
async function fetchToStream(
  req: Pick<RangeRequest, 'url' | 'total' | 'hash' | 'progress' | 'signal'>,
  out: Writable,
  streamed: { bytes: number },
): Promise<string | null> {
  const answer = await presignedRequest('the download', req, { method: 'GET', headers: {} });
  if (answer.statusCode !== 200) {
    const text = await readSmallBody(answer.body);
    throw new TransferError(
      kindOfStatus(answer.statusCode),
      `the download was refused (${answerReason(answer.statusCode, text)})`,
    );
  }
  const check = new CountingHash(req.hash, req.progress, req.total);
  // Into `out` without ending or destroying it, each chunk once `out` took it.
  const into = new Writable({
    write(chunk: Buffer, _encoding, done) {
      out.write(chunk, (error) => {
        if (!error) streamed.bytes += chunk.length;
        done(error ?? null);
      });
    },
  });
  try {
    await pipeline(answer.body, check, into, { signal: req.signal });
  } catch (error) {
    if ((error as Error).name === 'TooLarge') throw new TransferError('final', (error as Error).message);
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EPIPE') throw new CliExit(EXIT.brokenPipe);
    if (code && /^E[A-Z]+$/.test(code) && (error as NodeJS.ErrnoException).syscall) {
      throw new TransferError('final', `cannot write to standard output: ${code}`, { cause: error });
    }
    throw networkFailure('the download', error, req.signal);
  }
  if (check.size !== req.total) {
    throw new TransferError(
      'retry',
      `the download ended after ${formatBytes(check.size)} of ${formatBytes(req.total)}`,
    );
  }
  return sha256OfEtag(answer.headers.etag);
}

interface RangeRequest {
  url: string;
  part: string;
  /** Bytes already in the part file. */
  offset: number;
  total: number;
  hash: RunningHash;
  progress: Progress;
  signal: AbortSignal;
}

/**
 * Asks for the bytes from `offset` (all of them from 0) and appends them to the part file,
 * hashing them on the way. Resolves with the SHA-256 the answer's ETag carries, if any; throws
 * TransferErrors (`retry`, `refresh`, `final`) as the agent's transfers do.
 */
async function fetchRange(req: RangeRequest): Promise<string | null> {
  const whole = req.offset === 0;
  const answer = await presignedRequest('the download', req, {
    method: 'GET',
    headers: whole ? {} : { range: `bytes=${req.offset}-` },
  });
  const etag = sha256OfEtag(answer.headers.etag);
  if (answer.statusCode === 416 && req.offset === req.total) {
    discardBody(answer.body); // the part already holds every byte
    return etag;
  }
  let start: number;
  if (answer.statusCode === 200) start = 0;
  else if (answer.statusCode === 206 && !whole) start = rangeStart(answer.headers['content-range'], req.total);
  else if (answer.statusCode === 416) {
    discardBody(answer.body);
    fs.truncateSync(req.part, 0);
    throw new TransferError('retry', 'the storage refused to resume the download; starting over');
  } else {
    const text = await readSmallBody(answer.body);
    throw new TransferError(
      kindOfStatus(answer.statusCode),
      `the download was refused (${answerReason(answer.statusCode, text)})`,
    );
  }
  if (start !== req.offset) {
    fs.writeFileSync(req.part, ''); // the storage sends the whole file: the part starts over
  }
  await req.hash.catchUp(req.part, start);
  req.progress.reset(start);
  const check = new CountingHash(req.hash, req.progress, req.total - start);
  try {
    await pipeline(answer.body, check, fs.createWriteStream(req.part, { flags: 'a' }), { signal: req.signal });
  } catch (error) {
    if ((error as Error).name === 'TooLarge') throw new TransferError('final', (error as Error).message);
    const code = (error as NodeJS.ErrnoException).code;
    if (code && /^E[A-Z]+$/.test(code) && (error as NodeJS.ErrnoException).syscall) {
      throw new TransferError('final', `cannot write ${req.part}: ${code}`, { cause: error });
    }
    throw networkFailure('the download', error, req.signal);
  }
  if (check.size !== req.total - start) {
    throw new TransferError(
      'retry',
      `the download ended after ${formatBytes(start + check.size)} of ${formatBytes(req.total)}`,
    );
  }
  return etag;
}

/** Where a 206 answer's bytes start (`Content-Range: bytes <start>-<end>/<total>`), checked against the file. */
function rangeStart(header: string | string[] | undefined, total: number): number {
  const match = /^bytes (\d+)-(\d+)\/(\d+)$/.exec(String(header ?? ''));
  if (!match || Number(match[3]) !== total || Number(match[2]) !== total - 1) {
    throw new TransferError('final', `the storage answered a range this download did not ask for (${String(header)})`);
  }
  return Number(match[1]);
}

/** Passes bytes through, hashing and counting them; more than `limit` is an error. */
class CountingHash extends Transform {
  size = 0;

  constructor(
    readonly hash: RunningHash,
    readonly progress: Progress,
    readonly limit: number,
  ) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    this.size += chunk.length;
    if (this.size > this.limit) {
      const error = new Error(`the download is larger than the file's recorded size`);
      error.name = 'TooLarge';
      done(error);
      return;
    }
    this.hash.update(chunk);
    this.progress.advance(chunk.length);
    done(null, chunk);
  }
}

/** A name's longest length in UTF-8 bytes (the usual file system limit, as safeFilename's). */
const MAX_NAME_BYTES = 255;

/**
 * `<target>.<file id>.part` beside the target, the target's name cut (by whole characters) so that
 * the part's name stays within 255 bytes: a stored name of 214 to 255 bytes is a name the
 * target may have, and its part file must be one too.
 */
function partPathOf(target: string, fileId: string): string {
  const suffix = `.${fileId}.part`;
  const room = MAX_NAME_BYTES - Buffer.byteLength(suffix);
  let name = '';
  for (const char of path.basename(target)) {
    if (Buffer.byteLength(name + char) > room) break;
    name += char;
  }
  return path.join(path.dirname(target), `${name}${suffix}`);
}

/** The bytes already in the part file; a part longer than the file is emptied (it is not this file's). */
function partSize(part: string, total: number): number {
  let size: number;
  try {
    size = fs.statSync(part).size;
  } catch {
    return 0;
  }
  if (size <= total) return size;
  fs.writeFileSync(part, '');
  return 0;
}

/**
 * The directory `--output` writes into exists (checked before any call): an error saying so
 * otherwise, and what to run. `dl/` and an existing directory are that directory, else the
 * file's directory.
 */
function checkOutputDirectory(cwd: string, output: string | undefined): void {
  if (output === undefined) return;
  const resolved = path.resolve(cwd, output);
  if (statOf(resolved)?.isDirectory()) return;
  checkReplaceable(resolved, output);
  const given = output.endsWith('/') ? output.replace(/\/+$/, '') || '/' : path.dirname(output);
  const dir = path.resolve(cwd, given);
  const found = statOf(dir);
  if (found === undefined) {
    throw new CliError(
      `cannot write to ${output}: the directory ${dir} does not exist; create it first (mkdir -p ${given})`,
    );
  }
  if (!found.isDirectory()) throw new CliError(`cannot write to ${output}: ${dir} is not a directory`);
}

/**
 * What the download replaces, when it exists, is a regular file: the bytes go to a part file beside
 * it, renamed over it at the end, which would put a file in the place of a device (`-o /dev/null`,
 * `/dev/stdout`, as root), a FIFO or a socket, and write the part file into its directory (`/dev`).
 */
function checkReplaceable(target: string, shown: string): void {
  const found = statOf(target);
  if (found === undefined || found.isFile()) return;
  throw new CliError(
    `cannot write to ${shown}: it is ${kindOf(found)}, not a regular file, and the download would replace it ` +
      'with one; pass -o a file or a directory',
  );
}

function kindOf(stats: fs.Stats): string {
  if (stats.isDirectory()) return 'a directory';
  if (stats.isCharacterDevice()) return 'a character device';
  if (stats.isBlockDevice()) return 'a block device';
  if (stats.isFIFO()) return 'a FIFO';
  if (stats.isSocket()) return 'a socket';
  return 'a special file';
}

function statOf(file: string): fs.Stats | undefined {
  try {
    return fs.statSync(file);
  } catch {
    return undefined; // missing, or a part of the path is a file
  }
}

/** `--output` as a file, or a directory to put the file's own (safe) name in; the working directory without it. */
function targetPath(cwd: string, output: string | undefined, file: StoredFile): string {
  const name = safeFilename(file.filename, file.id);
  if (output === undefined) return path.join(cwd, name);
  const resolved = path.resolve(cwd, output);
  const isDir = output.endsWith('/') || fs.statSync(resolved, { throwIfNoEntry: false })?.isDirectory() === true;
  return isDir ? path.join(resolved, name) : resolved;
}

function checkedSha256(value: string): string {
  const hex = value.trim().toLowerCase();
  if (!/^[0-9a-f]{64}$/.test(hex)) throw new CliError(`--sha256: expected 64 hexadecimal digits, got \`${value}\``);
  return hex;
}

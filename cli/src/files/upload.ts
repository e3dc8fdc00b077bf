import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Backoff, contentTypeOf, retryTransfer, uploadFile } from '@drover/agent/client';
import type { RequestBody, Schema } from '@drover/shared/api';
import type { Caller } from '../callers.js';
import { CliError } from '../errors.js';
import { progressBar } from '../output/progress.js';
import type { Runtime } from '../runtime.js';
import { filesPath, type StoredFile } from './stored-file.js';
import { transferFailure } from './transfer-failure.js';

const ATTEMPTS = 3;

export interface UploadOptions {
  file: string;
  bindingId?: string;
  cleanupRule: RequestBody<'presignUpload'>['cleanupRule'];
  ttlSeconds?: number;
}

export interface Uploaded {
  /** The file's metadata as `complete` answered it. */
  file: StoredFile;
  /** Lowercase hex SHA-256 of the bytes sent. */
  sha256: string;
  /** Whether the coordinator reported the SHA-256 of what it received (it matched, else this throws). */
  checkedByServer: boolean;
}

type PresignedUpload = Schema<'PresignedUpload'>;

/**
 * Uploads a local file: presign, PUT the bytes to the presigned URL (streamed from disk, hashed
 * and counted on their way out, so memory does not grow with the file; up to 3 attempts), then
 * `complete`. The SHA-256 sent is compared with the one the storage reports for what it received
 * (the local backend's answer to the PUT), and the size with the one `complete` recorded.
 */
export async function uploadLocalFile(rt: Runtime, caller: Caller, options: UploadOptions): Promise<Uploaded> {
  const file = path.resolve(rt.cwd, options.file);
  const before = regularFile(file);
  const size = before.size;
  const name = path.basename(file);
  const base = await filesPath(caller);
  const presigned = await caller.api.post<PresignedUpload>(`${base}/presign-upload`, {
    ...(options.bindingId === undefined ? {} : { bindingId: options.bindingId }),
    filename: name,
    contentType: contentTypeOf(name),
    cleanupRule: options.cleanupRule,
    ...(options.ttlSeconds === undefined ? {} : { ttlSeconds: options.ttlSeconds }),
  } satisfies RequestBody<'presignUpload'>);
  const progress = progressBar(rt, `Uploading ${name}`, size);
  let sha256 = '';
  let answer: string;
  try {
    answer = await retryTransfer(
      async () => {
        const hash = createHash('sha256');
        progress.reset(0);
        // Opened for each attempt: a failed attempt's stream takes its file handle with it.
        const handle = await openForUpload(file);
        try {
          const text = await uploadFile({
            url: presigned.uploadUrl,
            method: presigned.method,
            headers: presigned.headers,
            handle,
            size,
            signal: rt.signal,
            onChunk: (chunk) => {
              hash.update(chunk);
              progress.advance(chunk.length);
            },
          });
          sha256 = hash.digest('hex');
          return text;
        } finally {
          await handle.close().catch(() => {});
        }
      },
      {
        attempts: ATTEMPTS,
        backoff: new Backoff({ baseMs: 500, capMs: 5000 }),
        signal: rt.signal,
        what: `the upload of ${name}`,
        log: (text) => rt.err(`drover: ${text}\n`),
      },
    );
  } catch (error) {
    throw transferFailure(error);
  } finally {
    progress.done();
  }
  // What was read is what the hash covers; a file written meanwhile would be stored half old, half new.
  const after = regularFile(file);
  if (describeChange(before, after) !== null) {
    throw new CliError(
      `${name} changed while it was uploaded (${describeChange(before, after)!}); the file is left pending: upload it again once it is written`,
    );
  }
  const received = receivedSha256(answer);
  if (received !== null && received !== sha256) {
    throw new CliError(
      `the storage received other bytes than ${name} holds: SHA-256 ${received} there, ${sha256} here; the file is left pending`,
    );
  }
  const completed = await caller.api.post<StoredFile>(`${base}/${encodeURIComponent(presigned.fileId)}/complete`);
  if (completed.size !== size) {
    throw new CliError(`the coordinator recorded ${completed.size} bytes for file ${completed.id}, ${size} were sent`);
  }
  return { file: completed, sha256, checkedByServer: received !== null };
}

async function openForUpload(file: string): Promise<fs.promises.FileHandle> {
  try {
    return await fs.promises.open(file, 'r');
  } catch (error) {
    throw new CliError(`cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`);
  }
}

/**
 * How a file changed between two looks at it, or null: its size, another file put in its place,
 * or its times (a write of the same size moves the modification time, and one that kept it, as
 * `cp -p` does, the change time).
 */
function describeChange(before: fs.Stats, after: fs.Stats): string | null {
  if (after.size !== before.size) return `${before.size} bytes when it started, ${after.size} now`;
  if (after.ino !== before.ino || after.dev !== before.dev) return 'another file took its place';
  if (after.mtimeMs !== before.mtimeMs || after.ctimeMs !== before.ctimeMs) {
    return `modified at ${after.ctime.toISOString()}`;
  }
  return null;
}

function regularFile(file: string): fs.Stats {
  let stat: fs.Stats;
  try {
    stat = fs.statSync(file);
  } catch (error) {
    throw new CliError(`cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`);
  }
  if (!stat.isFile()) throw new CliError(`${file} is not a file`);
  return stat;
}

/** The SHA-256 in the upload's answer (`{fileId, size, sha256}` from the local backend), if any. */
function receivedSha256(text: string): string | null {
  try {
    const body = JSON.parse(text) as { sha256?: unknown };
    return typeof body.sha256 === 'string' && /^[0-9a-f]{64}$/i.test(body.sha256) ? body.sha256.toLowerCase() : null;
  } catch {
    return null;
  }
}

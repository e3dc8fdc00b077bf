import fs from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { FILE_REF_TYPE, type FileRef } from '@drover/shared';
import { Backoff } from '../util/backoff.js';
import { contentTypeOf } from './content-type.js';
import type { JobFilesRequest } from './files-api.js';
import { formatBytes } from './format.js';
import { hashFileHandle } from './hash-file.js';
import { safeFilename } from './safe-names.js';
import { abortError, TransferAborted, TransferError } from './transfer-error.js';
import { uploadFile } from './upload.js';
import { resolveWorkspaceFile } from './workspace-path.js';
import { retryTransfer } from './retry-transfer.js';

/** The prefix of an output value naming a file to upload (docs/agent-protocol.md). */
export const FILE_OUTPUT_PREFIX = 'file:';

export interface OutputFilesRequest extends JobFilesRequest {
  /** The steps' output (`key=value` of `$DROVER_OUTPUT`). */
  output: Record<string, string>;
  /** Upload attempts per file (default 5). */
  attempts?: number;
}

export interface OutputFilesResult {
  /** The output with each uploaded `file:` value replaced by its FileRef and each failed one left out. */
  output: Record<string, unknown>;
  /** One sentence per output file that could not be delivered. */
  problems: string[];
  /** The bytes of the files uploaded. */
  bytes: number;
}

/**
 * Uploads each output value `file:<path>` (a file inside the job's workspace) through the agent's
 * signed file endpoints, in output order, one at a time: the file is hashed, a file record is
 * created (a presigned upload URL comes back), the file is PUT streaming, and the upload is
 * completed; the value becomes `{__type: 'FileRef', id}`. A path outside the workspace, a missing
 * file or an upload that fails after its retries leaves the key out and adds a problem.
 */
export async function deliverOutputFiles(req: OutputFilesRequest): Promise<OutputFilesResult> {
  const output: Record<string, unknown> = { ...req.output };
  const problems: string[] = [];
  let bytes = 0;
  for (const [key, value] of Object.entries(req.output)) {
    if (!value.startsWith(FILE_OUTPUT_PREFIX)) continue;
    const given = value.slice(FILE_OUTPUT_PREFIX.length);
    const label = `output \`${key}\` (${clip(req.mask ? req.mask(value) : value)})`;
    delete output[key];
    if (req.signal.aborted) {
      problems.push(`${label} was not uploaded: ${abortError(req.signal).message}`);
      continue;
    }
    const resolved = resolveWorkspaceFile(req.workspace, given);
    if (!resolved.ok) {
      problems.push(`${label} ${resolved.problem}; it was not uploaded`);
      continue;
    }
    try {
      const { ref, size } = await uploadOne(req, key, resolved.path);
      output[key] = ref;
      bytes += size;
    } catch (error) {
      const reason =
        error instanceof TransferAborted && error.why === 'timeout'
          ? 'the job timed out during the upload'
          : error instanceof Error
            ? error.message
            : String(error);
      problems.push(`${label} could not be uploaded: ${reason}`);
    }
  }
  return { output, problems, bytes };
}

async function uploadOne(req: OutputFilesRequest, key: string, file: string): Promise<{ ref: FileRef; size: number }> {
  // The name the coordinator records (the file's name, with any secret value masked).
  const filename = safeFilename((req.mask ?? ((text: string) => text))(path.basename(file)));
  const started = performance.now();
  const identity = await withFile(file, null, async (_handle, stat) => stat);
  let digest = await readDigest(req, file, identity);
  req.log(`uploading output \`${key}\`: ${filename} (${formatBytes(digest.size)})`);
  return retryTransfer(
    async (attempt) => {
      // The file may have changed since the last attempt: what is declared must be what is sent.
      if (attempt > 1) digest = await readDigest(req, file, identity);
      const presigned = await req.api.createOutputFile(req.jobId, {
        filename,
        contentType: contentTypeOf(filename),
        size: digest.size,
        sha256: digest.sha256,
      });
      await withFile(file, identity, (handle) =>
        uploadFile({
          url: presigned.uploadUrl,
          method: presigned.method,
          headers: presigned.headers,
          handle,
          size: digest.size,
          signal: req.signal,
        }),
      );
      await req.api.completeOutputFile(req.jobId, presigned.fileId);
      const took = ((performance.now() - started) / 1000).toFixed(1);
      req.log(`output \`${key}\` uploaded as file ${presigned.fileId} (${formatBytes(digest.size)}, ${took}s)`);
      return { ref: { __type: FILE_REF_TYPE, id: presigned.fileId }, size: digest.size };
    },
    {
      attempts: req.attempts ?? 5,
      backoff: req.backoff ?? new Backoff({ baseMs: 1000, capMs: 15_000 }),
      signal: req.signal,
      what: `upload of output \`${key}\``,
      log: (text) => req.log(text),
    },
  );
}

async function readDigest(req: OutputFilesRequest, file: string, identity: fs.Stats) {
  return withFile(file, identity, (handle) => hashFileHandle(handle, req.signal)).catch((error: unknown) => {
    if (req.signal.aborted) throw abortError(req.signal);
    if (error instanceof TransferError) throw error;
    throw new TransferError('final', `cannot read it (${(error as Error).message})`);
  });
}

/**
 * Runs `use` with the file opened afresh (never through a final symbolic link), checked to be a
 * regular file and, when `identity` is given, the same file (device and inode) as first checked.
 */
async function withFile<T>(
  file: string,
  identity: fs.Stats | null,
  use: (handle: FileHandle, stat: fs.Stats) => Promise<T>,
): Promise<T> {
  const handle = await fs.promises.open(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW).catch((error) => {
    throw new TransferError('final', `cannot open it (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
  });
  try {
    const stat = await handle.stat();
    if (!stat.isFile()) throw new TransferError('final', 'it is not a regular file');
    if (identity && (stat.ino !== identity.ino || stat.dev !== identity.dev)) {
      throw new TransferError('final', 'it was replaced by another file during the upload');
    }
    return await use(handle, stat);
  } finally {
    await handle.close().catch(() => {});
  }
}

const clip = (text: string): string => (text.length > 120 ? `${text.slice(0, 117)}...` : text);

import fs from 'node:fs';
import path from 'node:path';
import { looksLikeFileRef, type InputFileRef } from '@drover/shared';
import { Backoff } from '../util/backoff.js';
import { ResumableDownload, type DownloadSettings } from './download.js';
import type { JobFilesRequest } from './files-api.js';
import { formatBytes } from './format.js';
import { retryTransfer } from './retry-transfer.js';
import { safeFilename, safeParamDir } from './safe-names.js';
import { TransferAborted, TransferError } from './transfer-error.js';

export interface InputFilesRequest extends JobFilesRequest {
  params: Record<string, unknown>;
  /** Download attempts in a row that get no byte, per file (default 3). */
  attempts?: number;
  /** Where partial downloads are kept, the minimum speed (the agent's run options). */
  downloads?: DownloadSettings;
}

/** A downloaded input, as params.json shows it: the FileRef without its URL, plus its local `path`. */
export interface LocalFileRef {
  __type: 'FileRef';
  id: string;
  filename: string;
  contentType: string | null;
  size: number;
  sha256: string;
  path: string;
}

export type InputFilesResult =
  | {
      ok: true;
      /** The params for params.json: each FileRef a LocalFileRef. */
      params: Record<string, unknown>;
      /** The params for `DROVER_PARAM_<NAME>`: each FileRef its local path. */
      envParams: Record<string, unknown>;
      /** How many files were downloaded. */
      count: number;
      /** Their bytes. */
      bytes: number;
    }
  | { ok: false; message: string; aborted: 'timeout' | 'cancelled' | null };

const SHA256_HEX = /^[0-9a-fA-F]{64}$/;

/**
 * Downloads every input FileRef of the params (a top-level value `{__type: 'FileRef', ...}`)
 * into `<workspace>/inputs/<param>/<filename>` before the first step (docs/agent-protocol.md), verifying
 * size and SHA-256. The first file that cannot be had ends the whole thing with a message that
 * names it; a URL refused as expired is replaced by a fresh one from the coordinator.
 */
export async function fetchInputFiles(req: InputFilesRequest): Promise<InputFilesResult> {
  const params: Record<string, unknown> = { ...req.params };
  const envParams: Record<string, unknown> = { ...req.params };
  let count = 0;
  let bytes = 0;
  for (const [name, value] of Object.entries(req.params)) {
    if (!looksLikeFileRef(value)) continue;
    const ref = value as unknown as InputFileRef;
    const label = `input file \`${name}\``;
    if (typeof ref.id !== 'string' || ref.id === '') {
      return { ok: false, message: `${label} has no file id; no step was run`, aborted: null };
    }
    try {
      const local = await fetchOne(req, name, ref);
      params[name] = local;
      envParams[name] = local.path;
      count += 1;
      bytes += local.size;
    } catch (error) {
      const known = safeFilename(ref.filename, '');
      const shown = known === '' || known === ref.id ? '' : `${known}, `;
      if (error instanceof TransferAborted) {
        const message =
          error.why === 'timeout'
            ? `the job timed out while downloading ${label} (${shown}file ${ref.id}); no step was run`
            : `${error.message}; ${label} was being downloaded and no step was run`;
        return { ok: false, message, aborted: error.why };
      }
      const reason = error instanceof Error ? error.message : String(error);
      return {
        ok: false,
        message: `${label} (${shown}file ${ref.id}) could not be downloaded: ${reason}; no step was run`,
        aborted: null,
      };
    }
  }
  return { ok: true, params, envParams, count, bytes };
}

interface Source {
  url: string | null;
  size: number;
  sha256: string;
  filename: string;
  contentType: string | null;
}

async function fetchOne(req: InputFilesRequest, name: string, ref: InputFileRef): Promise<LocalFileRef> {
  let source = fromRef(ref);
  const dir = path.join(req.workspace, 'inputs', safeParamDir(name));
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const started = performance.now();
  let target = '';
  let download: ResumableDownload | undefined;
  let expected = { size: 0, sha256: '' };
  try {
    await retryTransfer(
      async () => {
        if (source.url === null) source = await freshSource(req, ref.id);
        target = path.join(dir, safeFilename(source.filename));
        if (!download) {
          req.log(`downloading input file \`${name}\`: ${path.basename(target)} (${formatBytes(source.size)})`);
          download = new ResumableDownload({
            ...req.downloads,
            target,
            expectedSize: source.size,
            expectedSha256: source.sha256,
            label: `input file \`${name}\``,
            signal: req.signal,
            log: (text) => req.log(text),
          });
          expected = { size: source.size, sha256: source.sha256.toLowerCase() };
        } else if (source.size !== expected.size || source.sha256.toLowerCase() !== expected.sha256) {
          throw new TransferError('final', 'the coordinator now gives another size or SHA-256 for the file');
        }
        await download.attempt(source.url!, target);
      },
      {
        attempts: req.attempts ?? 3,
        backoff: req.backoff ?? new Backoff({ baseMs: 1000, capMs: 10_000 }),
        signal: req.signal,
        what: `download of input file \`${name}\``,
        log: (text) => req.log(text),
        refresh: () => {
          source = { ...source, url: null };
        },
        progressed: () => download?.progressed() === true,
      },
    );
  } finally {
    download?.close();
  }
  const took = ((performance.now() - started) / 1000).toFixed(1);
  const relative = path.relative(req.workspace, target);
  req.log(`input file \`${name}\` ready: ${relative} (${formatBytes(source.size)}, SHA-256 verified, ${took}s)`);
  return {
    __type: 'FileRef',
    id: ref.id,
    filename: path.basename(target),
    contentType: source.contentType,
    size: source.size,
    sha256: source.sha256.toLowerCase(),
    path: target,
  };
}

/** What the job event said about the file; `url` null when it gave no usable URL or checks. */
function fromRef(ref: InputFileRef): Source {
  const complete =
    typeof ref.downloadUrl === 'string' &&
    Number.isSafeInteger(ref.size) &&
    (ref.size as number) >= 0 &&
    typeof ref.sha256 === 'string' &&
    SHA256_HEX.test(ref.sha256);
  return {
    url: complete ? ref.downloadUrl! : null,
    size: complete ? ref.size! : 0,
    sha256: complete ? ref.sha256! : '',
    filename: typeof ref.filename === 'string' ? ref.filename : '',
    contentType: typeof ref.contentType === 'string' ? ref.contentType : null,
  };
}

async function freshSource(req: InputFilesRequest, fileId: string): Promise<Source> {
  const fresh = await req.api.inputFile(req.jobId, fileId);
  if (!Number.isSafeInteger(fresh.size) || fresh.size < 0 || !SHA256_HEX.test(fresh.sha256)) {
    throw new TransferError('final', 'the coordinator gave no usable size and SHA-256 for the file');
  }
  return {
    url: fresh.downloadUrl,
    size: fresh.size,
    sha256: fresh.sha256,
    filename: fresh.filename,
    contentType: fresh.contentType || null,
  };
}

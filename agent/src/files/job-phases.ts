import { looksLikeFileRef } from '@drover/shared';
import { FILE_OUTPUT_PREFIX } from './output-files.js';

/** True when a top-level param is a FileRef: the job has files to download before its first step. */
export const hasInputFiles = (params: Record<string, unknown>): boolean =>
  Object.values(params).some((value) => looksLikeFileRef(value));

/** True when an output value names a file to upload. */
export const hasFileOutputs = (output: Record<string, string>): boolean =>
  Object.values(output).some((value) => value.startsWith(FILE_OUTPUT_PREFIX));

/**
 * The params without the download URLs of their FileRefs: a presigned URL is a credential and is
 * never written to params.json nor given to the steps.
 */
export function paramsWithoutUrls(params: Record<string, unknown>): Record<string, unknown> {
  if (!hasInputFiles(params)) return params;
  const copy: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(params)) {
    if (!looksLikeFileRef(value)) {
      copy[name] = value;
      continue;
    }
    const { downloadUrl: _url, expiresInSeconds: _expires, ...rest } = value;
    copy[name] = rest;
  }
  return copy;
}

/**
 * The signal of a file transfer phase: `stop` (shutdown, a second signal) or the end of what is
 * left of the job's time (`remainingMs` null: no limit; 0 or less: already over).
 */
export function jobTimeSignal(stop: AbortSignal, remainingMs: number | null): AbortSignal {
  if (remainingMs === null) return stop;
  if (remainingMs <= 0)
    return AbortSignal.any([stop, AbortSignal.abort(new DOMException('the job timed out', 'TimeoutError'))]);
  return AbortSignal.any([stop, AbortSignal.timeout(Math.max(1, Math.ceil(remainingMs)))]);
}

import type { FileHandle } from 'node:fs/promises';
import { pipeline, Readable, Transform } from 'node:stream';
import { presignedRequest, type PresignedTarget } from './presigned-request.js';
import { answerReason, kindOfStatus, readSmallBody, TransferError } from './transfer-error.js';

export interface UploadRequest extends PresignedTarget {
  method: string;
  /** Headers the presigned upload asks for (sent as given, plus Content-Length). */
  headers: Record<string, string>;
  handle: FileHandle;
  size: number;
  /** Sees every chunk on its way out (a progress bar, a hash of what was sent). */
  onChunk?(chunk: Buffer): void;
}

/**
 * PUTs an open file to a presigned upload URL, streaming it from its start (never read whole into
 * memory), with its exact Content-Length. Any 2xx is success, resolving with the answer's body
 * (the local backend's `{fileId, size, sha256}`, at most 64 KiB of it); failures are
 * TransferErrors of the kind the status means (transfer-error.ts) or TransferAborted.
 */
export async function uploadFile(req: UploadRequest): Promise<string> {
  // Exactly the bytes Content-Length announces, even when the file grew since it was measured
  // (the caller finds that out by looking at the file again).
  const file =
    req.size === 0
      ? Readable.from([])
      : req.handle.createReadStream({ start: 0, end: req.size - 1, autoClose: false, highWaterMark: 1 << 20 });
  const body = req.onChunk ? observed(file, req.onChunk) : file;
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (name.toLowerCase() !== 'content-length') headers[name] = value;
  }
  headers['content-length'] = String(req.size);
  // Refusals (an expired URL, a file over the limit) come before the bytes: `100 Continue`.
  const answer = await presignedRequest('the upload', req, {
    method: req.method.toUpperCase(),
    headers,
    body,
    expectContinue: true,
  });
  const text = await readSmallBody(answer.body);
  if (answer.statusCode < 200 || answer.statusCode >= 300) {
    const kind = answer.statusCode === 413 ? 'final' : kindOfStatus(answer.statusCode);
    throw new TransferError(kind, `the upload was refused (${answerReason(answer.statusCode, text)})`);
  }
  return text;
}

/** `source` through a pass-through stream calling `onChunk`; destroying either destroys both. */
function observed(source: Readable, onChunk: (chunk: Buffer) => void): Readable {
  const tap = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      onChunk(chunk);
      done(null, chunk);
    },
  });
  return pipeline(source, tap, () => {});
}

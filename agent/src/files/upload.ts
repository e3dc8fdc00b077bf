import type { FileHandle } from 'node:fs/promises';
import type { Dispatcher } from 'undici';
import { presignedRequest, type PresignedTarget } from './presigned-request.js';
import { answerReason, kindOfStatus, readSmallBody, TransferError } from './transfer-error.js';

export interface UploadRequest extends PresignedTarget {
  method: string;
  /** Headers the presigned upload asks for (sent as given, plus Content-Length). */
  headers: Record<string, string>;
  handle: FileHandle;
  size: number;
}

/**
 * PUTs an open file to a presigned upload URL, streaming it from its start (never read whole into
 * memory), with its exact Content-Length. Any 2xx is success; failures are TransferErrors of the
 * kind the status means (transfer-error.ts) or TransferAborted.
 */
export async function uploadFile(req: UploadRequest): Promise<void> {
  const body = req.handle.createReadStream({ start: 0, autoClose: false, highWaterMark: 1 << 20 });
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (name.toLowerCase() !== 'content-length') headers[name] = value;
  }
  headers['content-length'] = String(req.size);
  const answer = await presignedRequest('the upload', req, {
    method: req.method.toUpperCase() as Dispatcher.HttpMethod,
    headers,
    body,
  });
  const text = await readSmallBody(answer.body);
  if (answer.statusCode < 200 || answer.statusCode >= 300) {
    const kind = answer.statusCode === 413 ? 'final' : kindOfStatus(answer.statusCode);
    throw new TransferError(kind, `the upload was refused (${answerReason(answer.statusCode, text)})`);
  }
}

import type { FileHandle } from 'node:fs/promises';
import { request, type Dispatcher } from 'undici';
import {
  abortError,
  answerReason,
  kindOfStatus,
  networkFailure,
  readSmallBody,
  TransferError,
} from './transfer-error.js';

const STALL_TIMEOUT_MS = 60_000;

export interface UploadRequest {
  url: string;
  method: string;
  /** Headers the presigned upload asks for (sent as given, plus Content-Length). */
  headers: Record<string, string>;
  handle: FileHandle;
  size: number;
  signal: AbortSignal;
  dispatcher?: Dispatcher;
}

/**
 * PUTs an open file to a presigned upload URL, streaming it from its start (never read whole into
 * memory), with its exact Content-Length. Any 2xx is success; failures are TransferErrors of the
 * kind the status means (transfer-error.ts) or TransferAborted.
 */
export async function uploadFile(req: UploadRequest): Promise<void> {
  if (!/^https?:\/\//i.test(req.url)) throw new TransferError('final', 'the upload URL is not an http(s) URL');
  const body = req.handle.createReadStream({ start: 0, autoClose: false, highWaterMark: 1 << 20 });
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (name.toLowerCase() !== 'content-length') headers[name] = value;
  }
  headers['content-length'] = String(req.size);
  let answer: Dispatcher.ResponseData;
  try {
    answer = await request(req.url, {
      method: req.method.toUpperCase() as Dispatcher.HttpMethod,
      headers,
      body,
      signal: req.signal,
      headersTimeout: STALL_TIMEOUT_MS,
      bodyTimeout: STALL_TIMEOUT_MS,
      ...(req.dispatcher ? { dispatcher: req.dispatcher } : {}),
    });
  } catch (error) {
    body.destroy();
    if (req.signal.aborted) throw abortError(req.signal);
    throw networkFailure('the upload', error, req.signal);
  }
  const text = await readSmallBody(answer.body);
  if (answer.statusCode < 200 || answer.statusCode >= 300) {
    const kind = answer.statusCode === 413 ? 'final' : kindOfStatus(answer.statusCode);
    throw new TransferError(kind, `the upload was refused (${answerReason(answer.statusCode, text)})`);
  }
}

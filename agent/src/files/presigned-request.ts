import type { Readable } from 'node:stream';
import { sendRequest, type HttpResponse } from '../http/request.js';
import { networkFailure, TransferError } from './transfer-error.js';

/** Wait this long for the answer's headers, and at most this long between two chunks of the body. */
const STALL_TIMEOUT_MS = 60_000;

export interface PresignedTarget {
  url: string;
  signal: AbortSignal;
}

/**
 * Sends one request to a presigned URL (`what`: "the download", "the upload"), the common part of
 * downloads and uploads: only an http(s) URL is asked (else a `final` TransferError), a stalled
 * answer times out, and a failure without an answer is a retryable TransferError (an abort stays
 * an abort). A body stream that was not sent is destroyed. The answer's status is the caller's.
 */
export async function presignedRequest(
  what: string,
  target: PresignedTarget,
  options: { method: string; headers?: Record<string, string>; body?: Readable; expectContinue?: boolean },
): Promise<HttpResponse> {
  try {
    if (!/^https?:\/\//i.test(target.url)) throw new TransferError('final', `${what} URL is not an http(s) URL`);
    return await sendRequest(target.url, {
      ...options,
      signal: target.signal,
      idleTimeoutMs: STALL_TIMEOUT_MS,
    });
  } catch (error) {
    options.body?.destroy();
    if (error instanceof TransferError) throw error;
    throw networkFailure(what, error, target.signal);
  }
}

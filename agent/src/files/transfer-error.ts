import { ProxyFailure } from '../http/network-error.js';
import { discardBody } from '../http/request.js';

export { discardBody };

/**
 * Why a file transfer failed, and what to do about it: `retry` (the network, a 5xx, 408, 429: try
 * again after a pause), `refresh` (the presigned URL was refused, 401/403: it may have expired;
 * get a fresh one and try again), `final` (anything else: retrying cannot help).
 */
export type TransferErrorKind = 'retry' | 'refresh' | 'final';

export class TransferError extends Error {
  /** The bytes arrived but are not the expected ones (size or SHA-256): the content, not the transfer, is wrong. */
  readonly mismatch: boolean;
  /**
   * The coordinator itself did not answer (no connection, or a 502, 503, 504 in front of it): a
   * restart or an outage, waited out until the job's time is up rather than counted as an attempt.
   */
  readonly coordinatorAway: boolean;

  constructor(
    readonly kind: TransferErrorKind,
    message: string,
    options?: { cause?: unknown; mismatch?: boolean; coordinatorAway?: boolean },
  ) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'TransferError';
    this.mismatch = options?.mismatch === true;
    this.coordinatorAway = options?.coordinatorAway === true;
  }
}

/** The kind of failure an HTTP status (not 2xx) of a presigned URL means. */
export function kindOfStatus(status: number): TransferErrorKind {
  if (status === 401 || status === 403) return 'refresh';
  if (status === 408 || status === 429 || status >= 500) return 'retry';
  return 'final';
}

/** A short reason from an error answer's body (the coordinator's `message`, or S3's `<Message>`). */
export function answerReason(status: number, text: string): string {
  let message: string | null = null;
  try {
    const body = JSON.parse(text) as { message?: unknown };
    if (typeof body?.message === 'string') message = body.message;
  } catch {
    message = /<Message>([^<]{1,300})<\/Message>/.exec(text)?.[1] ?? null;
  }
  return message ? `HTTP ${status}: ${message}` : `HTTP ${status}`;
}

/** A network failure (no answer) as a retryable TransferError; an abort stays an abort. */
export function networkFailure(what: string, cause: unknown, signal?: AbortSignal): Error {
  if (signal?.aborted) return abortError(signal);
  const error = cause as { code?: string; message?: string; cause?: { code?: string; message?: string } };
  const detail =
    cause instanceof ProxyFailure
      ? cause.message
      : (error?.cause?.code ?? error?.code ?? error?.cause?.message ?? error?.message ?? String(cause));
  return new TransferError('retry', `${what} failed: ${detail}`, { cause });
}

/** The error thrown when `signal` stopped a transfer (shutdown, the job's timeout). */
export function abortError(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  if (reason instanceof Error && reason.name === 'TimeoutError')
    return new TransferAborted('timeout', 'the job timed out');
  return new TransferAborted('cancelled', typeof reason === 'string' ? reason : 'cancelled');
}

/** The transfer was stopped on purpose: not a failure of the file or of the network. */
export class TransferAborted extends Error {
  constructor(
    readonly why: 'timeout' | 'cancelled',
    message: string,
  ) {
    super(message);
    this.name = 'TransferAborted';
  }
}

/** At most `limit` bytes of an answer body as text (an error answer's reason); the rest is dropped. */
export async function readSmallBody(
  body: AsyncIterable<Buffer> & NodeJS.ReadableStream & { destroy(): void },
  limit = 64 * 1024,
): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of body) {
      chunks.push(chunk);
      size += chunk.length;
      if (size >= limit) break;
    }
  } catch {
    // a broken error answer: what arrived is enough
  } finally {
    discardBody(body);
  }
  return Buffer.concat(chunks).subarray(0, limit).toString('utf8');
}

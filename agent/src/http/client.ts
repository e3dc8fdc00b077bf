import type { KeyObject } from 'node:crypto';
import { AgentHeader, SIGNATURE_TOLERANCE_MS, signRequest } from '@drover/shared';
import { AgentError } from '../errors.js';
import { describeNetworkError } from './network-error.js';
import { AnswerTooLarge, readText, sendRequest, type HttpResponse } from './request.js';
import type { ServerClock } from './server-clock.js';

export { describeNetworkError };

/** Seconds to wait for the answer's headers, then for its body. */
const TIMEOUT_MS = 30_000;

/**
 * The longest a call may take in all, its answer read to the end: an answer that keeps dripping
 * (a byte now and then, never silent for TIMEOUT_MS) is given up then, instead of holding up the
 * reports queued behind it (docs/agent.md, "When the coordinator cannot be reached").
 */
export const CALL_DEADLINE_MS = 120_000;
/**
 * The slowest link a large body is given time for on top of CALL_DEADLINE_MS: one second per
 * 64 KiB sent, and as much again for the answer (that to `PUT /v1/agent/workflows` repeats part of
 * the set). A body of some kilobytes gets none; one of 16 MiB gets about 8.5 minutes more.
 */
const SLOW_LINK_BYTES_PER_S = 64 * 1024;

/** The deadline of a call sending `body`: CALL_DEADLINE_MS, more for a large body. */
export const callDeadlineMs = (body: string | undefined): number =>
  CALL_DEADLINE_MS + 2 * Math.floor((body === undefined ? 0 : Buffer.byteLength(body)) / SLOW_LINK_BYTES_PER_S) * 1000;

/**
 * The largest answer the agent reads from the coordinator (docs/agent.md, "When the
 * coordinator cannot be reached"): 32 MiB. The largest legitimate one is the answer to
 * `PUT /v1/agent/workflows`, which repeats part of the set the agent sent (at most 16 MiB); a
 * desired manifest is some kilobytes per application. Past it the read is given up, so that a broken or hostile answer
 * cannot take the agent's memory.
 */
export const MAX_ANSWER_BYTES = 32 * 1024 * 1024;

export interface HttpAnswer {
  status: number;
  body: unknown;
}

/** The answer to a signed request, with the `X-Nonce` that request was sent with. */
export interface SignedAnswer extends HttpAnswer {
  nonce: string;
}

/** An error answer of the coordinator (docs/errors.md): `{statusCode, code, message, details?}`. */
export interface CoordinatorErrorBody {
  code?: string;
  message?: string;
  /** A signature refusal carries the server's time (Unix ms). */
  details?: { serverTime?: unknown };
}

export interface CallOptions {
  /** Extra headers (signature headers for signed calls). */
  headers?: Record<string, string>;
  /** The raw JSON text to send. */
  body?: string;
  /** Learns the coordinator's time from the answer (its Date header, a refusal's serverTime). */
  clock?: ServerClock;
  /** The largest answer read (MAX_ANSWER_BYTES; tests pass a small one). */
  maxAnswerBytes?: number;
  /** Aborts the call, the reading of its answer included (an update job's cancel, stop or timeout). */
  signal?: AbortSignal;
  /** The longest the whole call may take (callDeadlineMs of the body; tests pass a short one). */
  deadlineMs?: number;
}

/**
 * One HTTP call to the coordinator; a network failure (or silence for 30 s, or an answer not read
 * in full by the call's deadline, 2 minutes for most) becomes an `unreachable` AgentError, an
 * answer larger than MAX_ANSWER_BYTES a `bad_response` one naming the call (both thrown, so
 * callers try again later as for any failure); an answer of any status is returned as is (the
 * body parsed as JSON when it is).
 */
export async function callCoordinator(
  origin: string,
  method: string,
  path: string,
  options: CallOptions = {},
): Promise<HttpAnswer> {
  const headers: Record<string, string> = { accept: 'application/json', ...options.headers };
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  const { clock } = options;
  const sentAt = clock?.localTime() ?? 0;
  const deadlineMs = options.deadlineMs ?? callDeadlineMs(options.body);
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(), deadlineMs).unref();
  const signal = options.signal ? AbortSignal.any([options.signal, deadline.signal]) : deadline.signal;
  const call = `${method} ${path.split('?')[0]}`;
  let res: HttpResponse;
  let text: string;
  try {
    res = await sendRequest(`${origin}${path}`, {
      method,
      headers,
      ...(options.body === undefined ? {} : { body: options.body }),
      idleTimeoutMs: TIMEOUT_MS,
      signal,
    });
    text = await readText(res.body, options.maxAnswerBytes ?? MAX_ANSWER_BYTES);
  } catch (cause) {
    if (cause instanceof AnswerTooLarge) {
      throw new AgentError(
        'bad_response',
        `the coordinator's answer to ${call} is larger than ${cause.limit}, the most the agent reads: given up`,
        { cause },
      );
    }
    if (deadline.signal.aborted && !options.signal?.aborted) {
      throw new AgentError(
        'unreachable',
        `the coordinator's answer to ${call} did not finish in ${Math.round(deadlineMs / 1000)}s; given up`,
        { cause },
      );
    }
    throw new AgentError('unreachable', `Cannot reach the coordinator at ${origin}: ${describeNetworkError(cause)}`, {
      cause,
    });
  } finally {
    clearTimeout(timer);
  }
  const receivedAt = clock?.localTime() ?? 0;
  clock?.observeDateHeader(res.headers.date, sentAt, receivedAt);
  let body: unknown = text;
  if (String(res.headers['content-type'] ?? '').includes('json') && text) {
    try {
      body = JSON.parse(text);
    } catch {
      // keep the text: the caller reports an unexpected answer
    }
  }
  const serverTime = serverTimeOf(body);
  if (clock && serverTime !== null) clock.observeServerTime(serverTime, sentAt, receivedAt);
  return { status: res.statusCode, body };
}

/** The server's time a signature refusal carries, or null. */
function serverTimeOf(body: unknown): number | null {
  const time = (body as CoordinatorErrorBody | null)?.details?.serverTime;
  return typeof body === 'object' && typeof time === 'number' && Number.isFinite(time) ? time : null;
}

/** The coordinator's message from an error answer, or a description of the answer. */
export function answerMessage(answer: HttpAnswer): string {
  const body = answer.body as CoordinatorErrorBody | string;
  if (typeof body === 'object' && body !== null && typeof body.message === 'string') return body.message;
  return `HTTP ${answer.status}`;
}

/**
 * Whether an answer of the coordinator to a signed call is worth trying again later: 401 (the
 * signature refused, perhaps by a clock about to be fixed), 408, 429 and 5xx.
 */
export const isRetryableStatus = (status: number): boolean =>
  status === 401 || status === 408 || status === 429 || status >= 500;

export interface SignedCaller {
  origin: string;
  agentId: string;
  privateKey: KeyObject;
  /** Signs with the coordinator's time as measured from its answers (docs/agent.md, "Clocks"). */
  clock?: ServerClock;
}

/**
 * A signed call (docs/agent-protocol.md). The signed path is taken from the URL as it is sent
 * (after URL normalization), so that it is byte for byte what the coordinator sees. The
 * timestamp is the coordinator's time as the caller's clock knows it; a refusal that shows the
 * timestamp was out of the window (the clock corrected itself from that very answer) is tried
 * once more with the corrected time.
 */
export async function signedCall(
  caller: SignedCaller,
  method: string,
  path: string,
  body?: unknown,
  options: { signal?: AbortSignal } = {},
): Promise<SignedAnswer> {
  const url = new URL(path, caller.origin);
  const sentPath = `${url.pathname}${url.search}`;
  const raw = body === undefined ? undefined : JSON.stringify(body);
  const attempt = async () => {
    const now = caller.clock?.now() ?? Date.now();
    const headers = signRequest({
      agentId: caller.agentId,
      privateKey: caller.privateKey,
      method,
      path: sentPath,
      body: raw,
      now,
    });
    const answer = await callCoordinator(caller.origin, method, sentPath, {
      headers,
      ...(raw === undefined ? {} : { body: raw }),
      ...(caller.clock ? { clock: caller.clock } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
    });
    return { answer: { ...answer, nonce: headers[AgentHeader.nonce] }, now };
  };
  const first = await attempt();
  const serverTime = first.answer.status === 401 ? serverTimeOf(first.answer.body) : null;
  if (caller.clock && serverTime !== null && Math.abs(first.now - serverTime) > SIGNATURE_TOLERANCE_MS) {
    return (await attempt()).answer;
  }
  return first.answer;
}

import type { IncomingHttpHeaders } from 'node:http';
import { request, type Dispatcher } from 'undici';
import { AnswerTooLarge, readText } from '@drover/agent/client';
import { ApiError, CliError, Interrupted, NoAnswer } from '../errors.js';
import { retryAfterMs } from '@drover/shared';

/** How long a call waits for the answer's headers unless it says otherwise. */
const ANSWER_TIMEOUT_MS = 60_000;

/**
 * The most of an answer's body read. The coordinator's largest answers are a few MiB: a page of a
 * job's log (1 MiB of text, at most 5000 lines), a page of 200 jobs with their outputs (256 KiB
 * each at most from an agent), a job with a result as large as `DROVER_BODY_LIMIT_BYTES` allows
 * (64 MiB at most). Past this, `--url` names something else: said so, not read into memory.
 */
export const MAX_ANSWER_BYTES = 128 * 1024 * 1024;

export interface ApiAnswer<T> {
  status: number;
  headers: IncomingHttpHeaders;
  body: T;
}

/**
 * The answering server's clock minus this machine's, in ms, from an answer's `Date` header (whole
 * seconds, so its middle) against the middle of the call (`sentAt` to `receivedAt`, this machine's
 * ms); undefined without a readable header.
 */
export function clockOffsetOf(headers: IncomingHttpHeaders, sentAt: number, receivedAt: number): number | undefined {
  const server = Date.parse(headers.date ?? '');
  if (!Number.isFinite(server)) return undefined;
  return Math.round(server + 500 - (sentAt + receivedAt) / 2);
}

export interface CallOptions {
  body?: unknown;
  /** The query's parameters; a list is the parameter once for each of its values (`agentId=…&agentId=…`). */
  query?: Record<string, string | number | boolean | readonly string[] | undefined>;
  headers?: Record<string, string>;
  /** Wait this long for the answer (a sync trigger run waits for its job). */
  answerTimeoutMs?: number;
}

/**
 * JSON calls to one coordinator's `/v1` API with one bearer credential (an API token or a
 * session). A 2xx answer resolves; any other is an ApiError carrying the API's `message`; no
 * answer at all is a CliError naming the coordinator; an interruption is Interrupted.
 */
export class Api {
  constructor(
    /** `http(s)://host[:port]` */
    readonly origin: string,
    readonly bearer: string | null,
    readonly signal?: AbortSignal,
    readonly dispatcher?: Dispatcher,
  ) {}

  async call<T>(method: Dispatcher.HttpMethod, path: string, options: CallOptions = {}): Promise<ApiAnswer<T>> {
    refuseDotSegments(path);
    const url = new URL(`/v1${path}`, this.origin);
    for (const [name, value] of Object.entries(options.query ?? {})) {
      if (Array.isArray(value)) for (const one of value as readonly string[]) url.searchParams.append(name, one);
      else if (value !== undefined) url.searchParams.set(name, String(value));
    }
    const headers: Record<string, string> = { accept: 'application/json', ...options.headers };
    if (this.bearer) headers.authorization = `Bearer ${this.bearer}`;
    let body: string | undefined;
    if (options.body !== undefined) {
      body = JSON.stringify(options.body);
      headers['content-type'] = 'application/json';
    }
    let answer: Dispatcher.ResponseData;
    try {
      answer = await request(url, {
        method,
        headers,
        body,
        signal: this.signal,
        headersTimeout: options.answerTimeoutMs ?? ANSWER_TIMEOUT_MS,
        bodyTimeout: ANSWER_TIMEOUT_MS,
        ...(this.dispatcher ? { dispatcher: this.dispatcher } : {}),
      });
    } catch (error) {
      throw this.#noAnswer(error, method, url);
    }
    let text: string;
    try {
      text = await readText(answer.body, MAX_ANSWER_BYTES, answer.headers);
    } catch (error) {
      if (error instanceof AnswerTooLarge) {
        throw new CliError(
          `the coordinator at ${this.origin} answered ${method} ${url.pathname} with more than ${error.limit}, ` +
            "the most drover reads of an answer: not Drover's API; check --url",
        );
      }
      throw this.#noAnswer(error, method, url);
    }
    const parsed = parseJson(text);
    if (answer.statusCode >= 300 && answer.statusCode < 400) {
      // Never followed (a bearer is not sent on to wherever a coordinator points): say where to go.
      throw redirectError(this.origin, url, answer.statusCode, parsed, answer.headers.location);
    }
    if (answer.statusCode < 200 || answer.statusCode >= 300) {
      throw apiError(answer.statusCode, parsed, text, retryAfterSecondsOf(answer.headers['retry-after']));
    }
    if (text !== '') this.#checkJson(method, url, answer.statusCode, answer.headers['content-type'], text);
    return { status: answer.statusCode, headers: answer.headers, body: parsed as T };
  }

  async get<T>(path: string, query?: CallOptions['query']): Promise<T> {
    return (await this.call<T>('GET', path, { query })).body;
  }

  async post<T>(path: string, body?: unknown): Promise<T> {
    return (await this.call<T>('POST', path, { body })).body;
  }

  async patch<T>(path: string, body: unknown): Promise<T> {
    return (await this.call<T>('PATCH', path, { body })).body;
  }

  async delete<T>(path: string): Promise<T> {
    return (await this.call<T>('DELETE', path)).body;
  }

  /**
   * A 2xx answer with a body is Drover's only when it is JSON: anything else (a web server's HTML
   * page, a proxy's text) means `--url` names something else, said so rather than read as an answer.
   */
  #checkJson(method: string, url: URL, status: number, contentType: string | string[] | undefined, text: string): void {
    const type = ((Array.isArray(contentType) ? contentType[0] : contentType) ?? '')
      .split(';')[0]!
      .trim()
      .toLowerCase();
    const json = type === 'application/json' || /^application\/[^/]+\+json$/.test(type);
    let what: string | null = null;
    if (!json) what = type === '' ? 'without a content type' : type;
    else {
      try {
        JSON.parse(text);
      } catch {
        what = `${type} that does not parse as JSON`;
      }
    }
    if (what === null) return;
    throw new CliError(
      `the coordinator at ${this.origin} answered ${method} ${url.pathname} with HTTP ${status} ${what}, not Drover's API: check --url`,
    );
  }

  /**
   * A call without an answer. A change (not a GET) whose connection was lost once it was on its way
   * may have been made: said so, rather than "cannot reach", so that nobody repeats a cancel, a
   * revocation or a creation believing it never arrived.
   */
  #noAnswer(error: unknown, method: string, url: URL): Error {
    if (this.signal?.aborted) return new Interrupted();
    const e = error as { code?: string; message?: string; cause?: { code?: string; message?: string } };
    const code = e?.cause?.code ?? e?.code ?? '';
    const detail = code || (e?.cause?.message ?? e?.message ?? String(error));
    const what =
      detail === 'UND_ERR_HEADERS_TIMEOUT'
        ? 'no answer in time'
        : (tlsRefusal(code, new URL(this.origin).hostname) ?? detail);
    const noAnswer = new NoAnswer(`cannot reach the coordinator at ${this.origin}: ${what}`, code, { cause: error });
    if (method === 'GET' || !noAnswer.afterSending) return noAnswer;
    return new NoAnswer(
      `the coordinator at ${this.origin} did not answer the ${method} ${url.pathname} it was sent (${what}): ` +
        'it may have been done; look before trying again',
      code,
      { cause: error },
    );
  }
}

/** The TLS verification failures of a coordinator behind a private CA or a wrong certificate. */
const UNTRUSTED_CERTIFICATE = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
]);

/**
 * What a TLS refusal means and what to do, rather than its bare code: a certificate of a CA the
 * machine does not trust (Node.js reads more CAs from `NODE_EXTRA_CA_CERTS`), one for another
 * host name, or an expired one; null for any other failure.
 */
function tlsRefusal(code: string, host: string): string | null {
  if (UNTRUSTED_CERTIFICATE.has(code)) {
    return (
      `its TLS certificate is not signed by a CA this machine trusts (${code}); for a private CA, ` +
      'set NODE_EXTRA_CA_CERTS to the CA certificate file (PEM)'
    );
  }
  if (code === 'ERR_TLS_CERT_ALTNAME_INVALID') {
    return `its TLS certificate does not name ${host} (${code}): use --url with a name the certificate has`;
  }
  if (code === 'CERT_HAS_EXPIRED') return `its TLS certificate has expired (${code})`;
  return null;
}

/**
 * An id given on the command line goes into the path (encoded), but a URL reads a segment `.` or
 * `..` (`%2e` too) as a step, never as a name: `drover trigger delete ..` would call
 * `DELETE /v1/orgs/:orgId/`, `drover files download ..` read the organization as a file. Such an
 * argument names nothing, so it is refused before any call; so is an empty one.
 */
function refuseDotSegments(path: string): void {
  const segments = path.split('?')[0]!.split('/').slice(1);
  const dots = segments.find((segment) => /^(?:\.|%2e){1,2}$/i.test(segment));
  if (dots !== undefined) throw new CliError(`\`${decodeURIComponent(dots)}\` is not an id (nor a name)`);
  // An empty argument (`drover job ''`) leaves an empty segment: the coordinator, which ignores a
  // trailing slash, would read the collection (`/jobs/`), or answer in its route's words.
  if (segments.includes('')) throw new CliError('expected an id (or a name), got nothing');
}

function parseJson(text: string): unknown {
  if (text === '') return null;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** The API's error as one line: its `message` (every error body has one), else the status. */
function apiError(status: number, body: unknown, text: string, retryAfter: number | null): ApiError {
  const fields = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
  const code = typeof fields.code === 'string' ? fields.code : typeof fields.error === 'string' ? fields.error : null;
  const message =
    typeof fields.message === 'string' && fields.message.trim() !== ''
      ? fields.message
      : `HTTP ${status}${text && typeof body === 'string' ? `: ${text.slice(0, 200)}` : ''}`;
  return new ApiError(status, code, oneLine(message), body, retryAfter);
}

/** A 3xx answer: the coordinator moved; name the origin to pass as `--url` (the redirect is not followed). */
function redirectError(
  origin: string,
  url: URL,
  status: number,
  body: unknown,
  location: string | string[] | undefined,
): ApiError {
  const where = Array.isArray(location) ? location[0] : location;
  let target: URL | null = null;
  try {
    if (where) target = new URL(where, url);
  } catch {
    target = null;
  }
  const message =
    target === null
      ? `the coordinator at ${origin} answers HTTP ${status} (a redirect without a usable Location): check --url`
      : `the coordinator at ${origin} redirects to ${target.href}: use --url ${target.origin}`;
  return new ApiError(status, 'redirect', oneLine(message), body, null);
}

/** A message on one line (a multi-line one joined with spaces). */
export function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, ' ').trim();
}

/** `Retry-After` in whole seconds (an HTTP date: the seconds until it); null without one. */
function retryAfterSecondsOf(header: string | string[] | undefined): number | null {
  const ms = retryAfterMs(header);
  return ms === null ? null : Math.ceil(ms / 1000);
}

import http, { type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import { pipeline, type Readable } from 'node:stream';
import { connectionFor } from './dispatcher.js';
import { ProxyFailure } from './network-error.js';

/** How long a new connection may take, TLS handshake included. */
const CONNECT_TIMEOUT_MS = 10_000;
/**
 * How long a body waits for the server's `100 Continue` when it was asked for (`expectContinue`),
 * before it is sent anyway to a server that ignores the expectation (as curl waits).
 */
const CONTINUE_WAIT_MS = 1000;

/** The answer to a request: its status, headers and body (a stream the caller reads or discards). */
export interface HttpResponse {
  statusCode: number;
  headers: IncomingHttpHeaders;
  body: IncomingMessage;
}

export interface RequestOptions {
  method: string;
  headers?: Record<string, string>;
  /** A text is sent with its Content-Length; a stream as it comes (give its Content-Length in `headers`). */
  body?: string | Readable;
  signal?: AbortSignal;
  /**
   * Once connected, the longest the connection may stay silent: while the answer's headers are
   * awaited (`HEADERS_TIMEOUT`), then between two pieces of its body (`BODY_TIMEOUT`). None when absent.
   */
  idleTimeoutMs?: number;
  /** Keep the connection to itself (a long-lived stream), out of the keep-alive pool. */
  ownConnection?: boolean;
  /**
   * With a stream body: send `Expect: 100-continue` and the body only once the server agreed, so
   * that a refusal (a bad URL, a file over the limit) is heard before any byte of it is sent.
   * Without it, a server that refuses at once and closes the connection while the body is still
   * being written leaves the client a reset connection (EPIPE, ECONNRESET) instead of its answer.
   */
  expectContinue?: boolean;
}

export type RequestTimeoutCode = 'CONNECT_TIMEOUT' | 'HEADERS_TIMEOUT' | 'BODY_TIMEOUT';

/** A request given up for a silent connection; `code` says at which stage. */
export class RequestTimeout extends Error {
  override readonly name = 'RequestTimeout';

  constructor(
    readonly code: RequestTimeoutCode,
    message: string,
  ) {
    super(message);
  }
}

const https = () => process.getBuiltinModule('node:https');

/**
 * One HTTP/1.1 request with Node's own client (`node:http`, `node:https`: TLS verified against
 * Node's CA store, `NODE_EXTRA_CA_CERTS` and `--ca-file` included), through the proxy the
 * environment names for the URL (dispatcher.ts; a failure of the proxy is a ProxyFailure).
 * Resolves with the answer, whatever its status, once its headers arrived; rejects on a network
 * failure, a timeout (RequestTimeout) or an abort (the signal's AbortError). Connections are kept
 * alive between requests; a request that finds its reused connection closed by the server in the
 * meantime is sent again once on a new one, when its body is a text (a stream cannot be sent twice).
 */
export function sendRequest(url: string | URL, options: RequestOptions): Promise<HttpResponse> {
  const target = new URL(url);
  if (target.protocol !== 'http:' && target.protocol !== 'https:') {
    return Promise.reject(new TypeError(`expected an http or https URL, got \`${target.protocol}\``));
  }
  return send(target, options, options.body === undefined || typeof options.body === 'string');
}

/** The server closed the kept-alive connection before the request went out on it. */
const isStaleConnection = (req: http.ClientRequest, error: NodeJS.ErrnoException): boolean =>
  req.reusedSocket && (error.code === 'ECONNRESET' || error.code === 'EPIPE');

function send(url: URL, options: RequestOptions, mayResend: boolean): Promise<HttpResponse> {
  const { body, idleTimeoutMs } = options;
  const headers = { ...options.headers };
  if (typeof body === 'string') headers['content-length'] = String(Buffer.byteLength(body));
  const expectContinue = options.expectContinue === true && body !== undefined && typeof body !== 'string';
  if (expectContinue) headers.expect = '100-continue';
  const client = url.protocol === 'https:' ? https() : http;
  const { agent, route } = connectionFor(url, options.ownConnection);
  const { proxy } = route;
  return new Promise((resolve, reject) => {
    const req = client.request(url, {
      method: options.method,
      headers,
      agent,
      ...(options.signal ? { signal: options.signal } : {}),
    });
    let answered: IncomingMessage | null = null;
    req.on('socket', (socket) => limitConnect(req, socket));
    if (idleTimeoutMs !== undefined) {
      req.setTimeout(idleTimeoutMs, () => {
        if (answered) {
          answered.destroy(new RequestTimeout('BODY_TIMEOUT', `no data for ${idleTimeoutMs} ms in the answer`));
        } else {
          req.destroy(new RequestTimeout('HEADERS_TIMEOUT', `no answer within ${idleTimeoutMs} ms`));
        }
      });
    }
    req.on('response', (res) => {
      answered = res;
      if (proxy && res.statusCode === 407 && url.protocol === 'http:') {
        // The proxy's refusal of a forwarded request, not the target's answer.
        discardBody(res);
        reject(new ProxyFailure(proxy, 407));
        return;
      }
      resolve({ statusCode: res.statusCode ?? 0, headers: res.headers, body: res });
    });
    req.on('error', (error) => {
      if (answered) return; // the body's reader sees what went wrong
      if (mayResend && isStaleConnection(req, error)) resolve(send(url, options, false));
      else reject(proxy ? ProxyFailure.of(error, proxy) : error);
    });
    if (body === undefined || typeof body === 'string') {
      req.end(body);
    } else if (!expectContinue) {
      // An answer may come before the whole body was sent (a refusal): it is the outcome then.
      pipeline(body, req, () => {});
    } else {
      // The body waits for `100 Continue`. A final answer instead (a refusal) is the outcome, and
      // the body is never sent; the unfinished request cannot leave its connection reusable.
      let sending = false;
      const sendBody = () => {
        if (sending || answered !== null || req.destroyed) return;
        sending = true;
        clearTimeout(wait);
        pipeline(body, req, () => {});
      };
      const wait = setTimeout(sendBody, CONTINUE_WAIT_MS);
      req.once('continue', sendBody);
      req.once('close', () => clearTimeout(wait));
      req.once('response', (res) => {
        clearTimeout(wait);
        if (sending) return;
        body.destroy();
        res.once('close', () => req.destroy());
      });
      req.flushHeaders();
    }
  });
}

/** Gives up a connection not established (TLS included) within CONNECT_TIMEOUT_MS. */
function limitConnect(req: http.ClientRequest, socket: Socket): void {
  if (!socket.connecting) return; // a kept-alive connection
  const timer = setTimeout(
    () => req.destroy(new RequestTimeout('CONNECT_TIMEOUT', `not connected within ${CONNECT_TIMEOUT_MS} ms`)),
    CONNECT_TIMEOUT_MS,
  );
  const done = () => clearTimeout(timer);
  socket.once('encrypted' in socket ? 'secureConnect' : 'connect', done);
  socket.once('close', done);
}

/** An answer body given up for being larger than the reader's limit. */
export class AnswerTooLarge extends Error {
  override readonly name = 'AnswerTooLarge';

  /** The limit in words (`32 MiB`). */
  readonly limit: string;

  constructor(readonly maxBytes: number) {
    super(`the answer is larger than ${formatBytes(maxBytes)}`);
    this.limit = formatBytes(maxBytes);
  }
}

/** `32 MiB`, `64 KiB`, `100 bytes`. */
const formatBytes = (bytes: number): string =>
  bytes >= 1024 * 1024 && bytes % (1024 * 1024) === 0
    ? `${bytes / 1024 / 1024} MiB`
    : bytes >= 1024 && bytes % 1024 === 0
      ? `${bytes / 1024} KiB`
      : `${bytes} bytes`;

/**
 * The whole body of an answer as text. Past `maxBytes` (a `Content-Length` that announces more,
 * or the bytes as they come) the body is destroyed, its connection closed, and the read rejects
 * with AnswerTooLarge: no more than the limit is ever held in memory. `headers` are the answer's
 * (an IncomingMessage's own by default; the `drover` command line passes undici's).
 */
export async function readText(
  body: Readable,
  maxBytes = Infinity,
  headers: IncomingHttpHeaders = (body as Partial<IncomingMessage>).headers ?? {},
): Promise<string> {
  const announced = Number(headers['content-length']);
  if (Number.isFinite(announced) && announced > maxBytes) {
    discardBody(body);
    throw new AnswerTooLarge(maxBytes);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += (chunk as Buffer).length;
    if (size > maxBytes) {
      discardBody(body);
      throw new AnswerTooLarge(maxBytes);
    }
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** An answer body that will not be read: dropped without an unhandled `error` event. */
export function discardBody(body: NodeJS.ReadableStream & { destroy(): void }): void {
  body.on('error', () => {});
  body.destroy();
}

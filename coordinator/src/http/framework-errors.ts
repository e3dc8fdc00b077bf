import { randomUUID } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest, FastifyServerOptions } from 'fastify';
import { AppError } from '../errors.js';

/**
 * Refusals that happen before a route is found, in the one error shape (docs/errors.md) with an
 * `x-request-id`, instead of Fastify's and Node's own bodies.
 */

/** A URL the router cannot take: a malformed percent-encoding (400), an id too long to exist (404). */
export const answerFrameworkError: NonNullable<FastifyServerOptions['frameworkErrors']> = (error, request, reply) => {
  const refusal =
    error.code === 'FST_ERR_MAX_PARAM_LENGTH'
      ? new AppError('not_found', 'Not found: no resource has an id this long')
      : error.code === 'FST_ERR_BAD_URL'
        ? new AppError('bad_request', 'The URL is not valid: it has a malformed percent-encoding')
        : new AppError('internal', 'Internal server error');
  const raw = reply as unknown as FastifyReply;
  void raw
    .header('x-request-id', (request as FastifyRequest).id)
    .status(refusal.statusCode)
    .send(refusal.toBody());
};

/**
 * A request Node's HTTP parser could not read (malformed, headers too large, too slow): answered
 * in the one error shape, then the connection is closed, as Node itself does.
 */
export function answerClientError(this: FastifyInstance, error: NodeJS.ErrnoException, socket: Duplex): void {
  // Node's parser fails again on each later chunk of the connection: answered once.
  if (error.code === 'ECONNRESET' || socket.destroyed || lingering.has(socket)) return;
  const refusal =
    error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? new AppError('request_timeout', 'The request did not arrive in time')
      : error.code === 'HPE_HEADER_OVERFLOW'
        ? new AppError('headers_too_large', 'The request headers are too large')
        : new AppError(
            'bad_request',
            'The request is not valid HTTP (for example, a Content-Length that does not match the body)',
          );
  // Not the error itself: Node's parse errors carry the request's raw bytes (`rawPacket`), with
  // its Authorization and Cookie headers, a presigned URL's signature, a body's password.
  this.log.debug({ code: error.code, reason: error.message }, 'client error');
  writeRawRefusal(socket, refusal, error, {
    head: isHeadRequest(error),
    // A client too slow is let go at once; one that sent what is not HTTP may still be sending.
    linger: error.code !== 'ERR_HTTP_REQUEST_TIMEOUT',
  });
}

/**
 * How long a connection refused in the middle of a request is still read (and what arrives
 * dropped) after its answer, before it is closed for good. Closed at once, the unread bytes of a
 * client still sending its body (a megabyte after a request line HTTP refuses) make the kernel
 * reset the connection, and the client may lose the answer with it (ECONNRESET, "no answer"),
 * as the route fuzzer saw on a busy machine. nginx's `lingering_close` does the same.
 */
const LINGER_MS = 2_000;
const lingering = new WeakSet<Duplex>();

function closeLingering(socket: Duplex): void {
  lingering.add(socket);
  socket.end();
  socket.resume(); // what the client still sends is read and dropped
  const timer = setTimeout(() => socket.destroy(), LINGER_MS);
  timer.unref();
  socket.once('close', () => clearTimeout(timer));
}

/** A request line, whole or cut short by the error: the method, then the request target. */
const REQUEST_LINE = /([A-Z]+) (?:\/|\*|https?:\/\/)[^\r\n]*(?:\r\n|$)/g;

/**
 * Whether the request Node's parser failed on is a HEAD, read from the bytes it failed in
 * (`rawPacket`, up to `bytesParsed`): its request line is the last one there, possibly behind the
 * end of an earlier request on the connection. False when those bytes hold no request line
 * (headers too large that arrived in pieces): then the refusal keeps its body.
 */
export function isHeadRequest(error: Error & { rawPacket?: unknown; bytesParsed?: unknown }): boolean {
  const raw = error.rawPacket;
  if (!Buffer.isBuffer(raw)) return false;
  const end = typeof error.bytesParsed === 'number' ? Math.min(raw.length, error.bytesParsed + 1) : raw.length;
  const lines = [...raw.toString('latin1', 0, end).matchAll(REQUEST_LINE)];
  // `endsWith`: the method may follow the last bytes of an earlier body without a separator.
  return lines.at(-1)?.[1]?.endsWith('HEAD') === true;
}

/**
 * Answers on a connection Fastify is not answering on (no request was read, or it is abandoned),
 * in the one error shape, then closes it (`linger`: after reading what the client still sends,
 * for a while: closeLingering). The answer to a HEAD has the headers of that answer
 * and no body: a client reading a HEAD answer takes any bytes after the headers as garbage.
 */
export function writeRawRefusal(
  socket: Duplex,
  refusal: AppError,
  cause?: Error,
  options: { head?: boolean; linger?: boolean } = {},
): void {
  if (socket.writable) {
    const body = JSON.stringify(refusal.toBody());
    socket.write(
      `HTTP/1.1 ${refusal.statusCode} ${STATUS_CODES[refusal.statusCode]}\r\n` +
        `content-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\n` +
        `date: ${new Date().toUTCString()}\r\nx-request-id: ${randomUUID()}\r\nconnection: close\r\n\r\n${options.head ? '' : body}`,
    );
  }
  if (options.linger && socket.writable) closeLingering(socket);
  else socket.destroy(cause);
}

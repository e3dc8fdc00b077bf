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
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const refusal =
    error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? new AppError('request_timeout', 'The request did not arrive in time')
      : error.code === 'HPE_HEADER_OVERFLOW'
        ? new AppError('headers_too_large', 'The request headers are too large')
        : new AppError(
            'bad_request',
            'The request is not valid HTTP (for example, a Content-Length that does not match the body)',
          );
  this.log.debug({ err: error }, 'client error');
  writeRawRefusal(socket, refusal, error);
}

/**
 * Answers on a connection Fastify is not answering on (no request was read, or it is abandoned),
 * in the one error shape, then closes it.
 */
export function writeRawRefusal(socket: Duplex, refusal: AppError, cause?: Error): void {
  if (socket.writable) {
    const body = JSON.stringify(refusal.toBody());
    socket.write(
      `HTTP/1.1 ${refusal.statusCode} ${STATUS_CODES[refusal.statusCode]}\r\n` +
        `content-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\n` +
        `date: ${new Date().toUTCString()}\r\nx-request-id: ${randomUUID()}\r\nconnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(cause);
}

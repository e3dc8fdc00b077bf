import type { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { AppError } from '../errors.js';

/**
 * How the server closes its connections when it shuts down. `server.close()` stops accepting
 * connections and closes the idle ones; the others are busy with a request:
 *
 * - the answer to a request in flight carries `Connection: close` when no other request waits
 *   behind it on the connection, so Node closes the connection once it is sent (left alone, Node
 *   would keep it alive for the keep-alive timeout, 72 s, and hold the shutdown that long);
 * - a request arriving on an open connection meanwhile (pipelined behind one in flight) is answered
 *   503 `unavailable` with `Connection: close`.
 *
 * Nothing is closed under a client that may be sending: a connection ends right after an answer
 * that told the client so (sweeping idle connections instead reset ones whose next request was on
 * its way).
 */
export function registerGracefulClose(app: FastifyInstance): void {
  let closing = false;
  /** Requests on each connection that are not answered yet (pipelining makes it more than one). */
  const inFlight = new WeakMap<Socket, number>();

  app.addHook('preClose', (done) => {
    closing = true;
    done();
  });

  app.addHook('onRequest', (request, reply, done) => {
    const socket = request.raw.socket;
    inFlight.set(socket, (inFlight.get(socket) ?? 0) + 1);
    if (!closing) {
      done();
      return;
    }
    void reply.header('connection', 'close');
    done(new AppError('unavailable', 'The server is shutting down; retry shortly'));
  });

  app.addHook('onSend', (request, reply, payload, done) => {
    if (closing && (inFlight.get(request.raw.socket) ?? 0) <= 1) void reply.header('connection', 'close');
    done(null, payload);
  });

  app.addHook('onResponse', (request, _reply, done) => {
    const socket = request.raw.socket;
    const left = (inFlight.get(socket) ?? 1) - 1;
    if (left > 0) inFlight.set(socket, left);
    else inFlight.delete(socket);
    done();
  });
}

import http, { type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { AppError } from '../errors.js';
import { writeRawRefusal } from './framework-errors.js';

/**
 * Bounds on what one client can hold open: time to send a request, and connections at once.
 *
 * Node's own `requestTimeout` cannot be used: it bounds a whole request, and a presigned upload
 * of a few GiB over a slow link may rightly take an hour. So Node only bounds the headers
 * (`headersTimeout`), and a sweep bounds the bodies: a request with a body must have it complete
 * within `requestTimeoutMs` of its start, except a file upload (`PUT /v1/storage/blobs/...`),
 * which may take as long as it needs but must not stall: no byte for `requestTimeoutMs` ends it.
 * Either way the client gets 408 `request_timeout` (when no answer has begun) and the connection
 * is closed, as Node does for its own timeouts.
 */
export interface SlowClientLimits {
  readonly requestTimeoutMs: number;
  /** Connections one client address may hold open at once; 0: no limit. */
  readonly maxConnectionsPerClient: number;
}

/** Fastify's keep-alive default, kept: an idle connection is closed after this long. */
const KEEP_ALIVE_TIMEOUT_MS = 72_000;

/** The sweep runs this often, so a timeout is enforced within a quarter of itself (at most 1 s late). */
const sweepIntervalOf = (timeoutMs: number) => Math.max(25, Math.min(1_000, Math.floor(timeoutMs / 4)));

/** A `serverFactory` for Fastify: the HTTP server with the limits above installed. */
export function createGuardedServer(
  handler: (req: IncomingMessage, res: ServerResponse) => void,
  limits: SlowClientLimits,
): Server {
  const server = http.createServer(
    {
      headersTimeout: limits.requestTimeoutMs,
      requestTimeout: 0,
      keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
      connectionsCheckingInterval: sweepIntervalOf(limits.requestTimeoutMs),
    },
    handler,
  );
  answerExpectContinue(server);
  enforceBodyDeadlines(server, limits.requestTimeoutMs);
  if (limits.maxConnectionsPerClient > 0) limitConnectionsPerClient(server, limits.maxConnectionsPerClient);
  closeSilentConnectionsWithIdleOnes(server);
  return server;
}

/**
 * A connection that has not sent a byte yet is closed with the idle ones when the server closes
 * (Fastify's `forceCloseConnections: 'idle'`). Node counts it as busy (its headers timeout runs), so
 * `closeIdleConnections` would leave it, and a client that connected ahead of need (a browser's
 * preconnect, a pooled HTTP client) would hold a graceful shutdown for the whole headers timeout.
 */
function closeSilentConnectionsWithIdleOnes(server: Server): void {
  const sockets = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  const closeIdle = server.closeIdleConnections.bind(server);
  server.closeIdleConnections = () => {
    closeIdle();
    for (const socket of sockets) if (socket.bytesRead === 0) socket.destroy();
  };
}

interface Pending {
  res: ServerResponse;
  upload: boolean;
  /** When the request started, or (upload) when its last byte arrived. */
  since: number;
  bytesRead: number;
}

/** Only requests that announce a body are tracked: the rest are complete once their headers are. */
function hasBody(req: IncomingMessage): boolean {
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

/**
 * `Expect: 100-continue`: a file upload (the agent and `drover` send it) is told to send its body
 * only once its route accepted it (routes/storage-blobs.ts), so that a refusal (a bad URL, a file
 * over the limit) comes before any byte of it; a client that wrote its bytes meanwhile would get a
 * reset connection instead of the answer. Any other request is told at once, as Node does.
 */
function answerExpectContinue(server: Server): void {
  server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => {
    if (!isUpload(req)) res.writeContinue();
    server.emit('request', req, res);
  });
}

function isUpload(req: IncomingMessage): boolean {
  return req.method === 'PUT' && req.url !== undefined && req.url.startsWith('/v1/storage/blobs/');
}

function enforceBodyDeadlines(server: Server, timeoutMs: number): void {
  const pending = new Map<IncomingMessage, Pending>();
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    if (!hasBody(req)) return;
    pending.set(req, { res, upload: isUpload(req), since: performance.now(), bytesRead: req.socket.bytesRead });
  });
  const sweep = () => {
    const now = performance.now();
    for (const [req, entry] of pending) {
      // Node detaches the socket of a request answered before its body ended (a 413 cut into a
      // chunked upload that goes on being sent): gone, as a destroyed one.
      const socket = req.socket as Socket | null;
      if (req.complete || !socket || socket.destroyed) {
        pending.delete(req);
        continue;
      }
      if (entry.upload && socket.bytesRead !== entry.bytesRead) {
        entry.bytesRead = socket.bytesRead;
        entry.since = now;
        continue;
      }
      if (now - entry.since < timeoutMs) continue;
      pending.delete(req);
      if (entry.res.headersSent) socket.destroy();
      else
        writeRawRefusal(
          socket,
          new AppError(
            'request_timeout',
            entry.upload
              ? `The upload stalled: no data arrived for ${timeoutMs / 1000} s`
              : `The request body did not arrive within ${timeoutMs / 1000} s`,
          ),
        );
    }
  };
  const timer = setInterval(sweep, sweepIntervalOf(timeoutMs));
  timer.unref();
  server.on('close', () => clearInterval(timer));
}

function limitConnectionsPerClient(server: Server, max: number): void {
  const open = new Map<string, number>();
  server.on('connection', (socket: Socket) => {
    const address = socket.remoteAddress ?? '';
    const count = (open.get(address) ?? 0) + 1;
    if (count > max) {
      writeRawRefusal(
        socket,
        new AppError('rate_limited', `Too many connections from your address: at most ${max} may be open at once`),
      );
      return;
    }
    open.set(address, count);
    socket.once('close', () => {
      const left = (open.get(address) ?? 1) - 1;
      if (left <= 0) open.delete(address);
      else open.set(address, left);
    });
  });
}

import http, { type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CALL_DEADLINE_MS, callCoordinator, callDeadlineMs, MAX_ANSWER_BYTES } from '../../src/http/client.js';
import { configureDispatcher } from '../../src/http/dispatcher.js';
import { AnswerTooLarge, readText } from '../../src/http/request.js';
import { AgentError } from '../../src/errors.js';

/**
 * The coordinator's answers are read within a limit (MAX_ANSWER_BYTES): a huge answer to a call
 * the agent makes at every connect must not take its memory (an OOM, a restart, the same call).
 */

let server: http.Server;
let origin: string;
/** How many bytes the server wrote into each huge answer before the client went away. */
const written: number[] = [];
/** How many dripping answers the client closed. */
let dripsClosed = 0;

beforeAll(async () => {
  configureDispatcher({ env: {} });
  server = http.createServer((req, res) => {
    if (req.url === '/v1/agent/deploy/desired') {
      // Streamed without a Content-Length, without end: the agent must stop reading.
      res.writeHead(200, { 'content-type': 'application/json' });
      const piece = Buffer.alloc(1024 * 1024, 0x20);
      let sent = 0;
      const more = () => {
        while (!res.destroyed && sent < 4 * MAX_ANSWER_BYTES) {
          sent += piece.length;
          if (!res.write(piece)) return void res.once('drain', more);
        }
        written.push(sent);
        res.end();
      };
      res.on('close', () => written.push(sent));
      more();
      return;
    }
    const pathname = req.url!.split('?')[0];
    if (pathname === '/drip' || pathname === '/drip-headers') {
      // An answer that never stays silent long enough for the idle timeout, and never ends.
      if (pathname === '/drip') res.writeHead(200, { 'content-type': 'application/json' });
      else res.socket!.write('HTTP/1.1 200 OK\r\n');
      const timer = setInterval(() => (pathname === '/drip' ? res.write(' ') : res.socket!.write('x-a: b\r\n')), 50);
      res.on('close', () => {
        clearInterval(timer);
        dripsClosed += 1;
      });
      return;
    }
    if (req.url === '/announced') {
      // A Content-Length past the limit: refused before any byte is read.
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(1_500_000_000) });
      res.write('{"apps":[');
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ apps: [], padding: 'x'.repeat(2000) }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const failure = (promise: Promise<unknown>): Promise<AgentError> =>
  promise.then(
    () => {
      throw new Error('expected the call to fail');
    },
    (error: unknown) => error as AgentError,
  );

describe('callCoordinator: the size of an answer', () => {
  it('is 32 MiB at most', () => {
    expect(MAX_ANSWER_BYTES).toBe(32 * 1024 * 1024);
  });

  it('gives up an answer that grows past the limit, naming the call, and closes its connection', async () => {
    const error = await failure(callCoordinator(origin, 'GET', '/v1/agent/deploy/desired'));
    expect(error).toBeInstanceOf(AgentError);
    expect(error.code).toBe('bad_response');
    expect(error.message).toBe(
      "the coordinator's answer to GET /v1/agent/deploy/desired is larger than 32 MiB, the most the agent reads: given up",
    );
    // The server was stopped well before the 128 MiB it had to send: the connection was closed.
    await expect.poll(() => written.length).toBeGreaterThan(0);
    expect(written[0]).toBeLessThan(4 * MAX_ANSWER_BYTES);
  });

  it('is read no further than the limit and a chunk, and the body is destroyed: no more is held', async () => {
    // A body that never ends, counting what is pulled from it. (The process's memory is no
    // measure here: the other test files of this worker allocate and free buffers meanwhile.)
    const chunk = 64 * 1024;
    let pulled = 0;
    const body = Object.assign(
      new Readable({
        read() {
          pulled += chunk;
          this.push(Buffer.alloc(chunk, 0x20));
        },
      }),
      { headers: {} },
    );
    const limit = 1024 * 1024;
    await expect(readText(body as unknown as IncomingMessage, limit)).rejects.toBeInstanceOf(AnswerTooLarge);
    expect(body.destroyed).toBe(true);
    expect(pulled).toBeGreaterThan(limit);
    expect(pulled).toBeLessThanOrEqual(limit + 4 * chunk); // the limit, the chunk past it, the stream's buffer
  });

  it('gives up at once an answer whose Content-Length is past the limit', async () => {
    const error = await failure(callCoordinator(origin, 'GET', '/announced', { maxAnswerBytes: 1024 }));
    expect(error.code).toBe('bad_response');
    expect(error.message).toBe(
      "the coordinator's answer to GET /announced is larger than 1 KiB, the most the agent reads: given up",
    );
  });

  it('reads an answer within the limit, and the next call works', async () => {
    const small = await failure(callCoordinator(origin, 'GET', '/other?x=1', { maxAnswerBytes: 1000 }));
    expect(small.message).toBe(
      "the coordinator's answer to GET /other is larger than 1000 bytes, the most the agent reads: given up",
    );
    const answer = await callCoordinator(origin, 'GET', '/other', { maxAnswerBytes: 4096 });
    expect(answer.status).toBe(200);
    expect((answer.body as { apps: unknown[] }).apps).toEqual([]);
  });
});

describe('callCoordinator: the time an answer may take', () => {
  it('is 2 minutes in all, more for a large body on a slow link', () => {
    expect(CALL_DEADLINE_MS).toBe(120_000);
    expect(callDeadlineMs(undefined)).toBe(120_000);
    expect(callDeadlineMs(JSON.stringify({ workflows: [] }))).toBe(120_000);
    expect(callDeadlineMs('x'.repeat(16 * 1024 * 1024))).toBe(120_000 + 512_000);
  });

  it.each(['/drip', '/drip-headers'])(
    'gives up an answer that drips past the deadline (%s), naming the call, and closes its connection',
    async (path) => {
      const closed = dripsClosed;
      const started = Date.now();
      const error = await failure(callCoordinator(origin, 'PUT', `${path}?x=1`, { body: '{}', deadlineMs: 1000 }));
      expect(error).toBeInstanceOf(AgentError);
      expect(error.code).toBe('unreachable');
      expect(error.message).toBe(`the coordinator's answer to PUT ${path} did not finish in 1s; given up`);
      expect(Date.now() - started).toBeLessThan(5000);
      await expect.poll(() => dripsClosed).toBe(closed + 1);
    },
  );

  it("says a caller's abort as before, not as the deadline", async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 200);
    const error = await failure(
      callCoordinator(origin, 'GET', '/drip', { signal: controller.signal, deadlineMs: 60_000 }),
    );
    expect(error.code).toBe('unreachable');
    expect(error.message).toMatch(/^Cannot reach the coordinator at /);
  });

  it('leaves an answer within the deadline alone', async () => {
    const answer = await callCoordinator(origin, 'GET', '/other', { deadlineMs: 1000 });
    expect(answer.status).toBe(200);
  });
});

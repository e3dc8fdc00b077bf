import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import {
  canonicalRequest,
  generateEd25519KeyPair,
  privateKeyFromBase64,
  publicKeyFromBase64,
  verifyBytes,
} from '@drover/shared';
import { signedCall } from '../../src/http/client.js';
import { StreamClient, type ConnectionState, type StreamMessage } from '../../src/stream/stream-client.js';
import { ReportClaims, reportDigest } from '../../src/daemon/report-claims.js';
import { Backoff } from '../../src/util/backoff.js';
import { captureLogger } from '../log-capture.js';
import { eventually, sleep } from '../../../test/helpers/poll.js';

const keys = generateEd25519KeyPair();
const agentId = '6f1c2b8e-4d3a-4f5b-9c7d-0e1f2a3b4c5d';

type Handler = (req: http.IncomingMessage, res: http.ServerResponse, attempt: number) => void;

/** A stand-in coordinator for the stream: `handler` answers each connection attempt. */
async function sseServer(handler: Handler) {
  const requests: http.IncomingHttpHeaders[] = [];
  const sockets = new Set<import('node:net').Socket>();
  const server = http.createServer((req, res) => {
    requests.push(req.headers);
    handler(req, res, requests.length);
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    origin,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

const openStream = (res: http.ServerResponse) => {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  res.write(': hello\n\n');
};
const event = (res: http.ServerResponse, name: string, id: string, data: unknown) =>
  res.write(`event: ${name}\nid: ${id}\ndata: ${JSON.stringify(data)}\n\n`);

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function client(
  origin: string,
  options: {
    idleTimeoutMs?: number;
    maxEventChars?: number;
    healthyAfterMs?: number;
    beforeConnect?: () => Promise<string | null | void>;
    prepareTimeoutMs?: number;
    onReportsChecked?: (checks: boolean) => void;
    onReportsOutdated?: () => void;
    random?: () => number;
  } = {},
) {
  const messages: StreamMessage[] = [];
  const states: [ConnectionState, string | null][] = [];
  const { logger, records } = captureLogger();
  const stream = new StreamClient({
    origin,
    agentId,
    privateKey: privateKeyFromBase64(keys.privateKey),
    logger,
    onMessage: (m) => messages.push(m),
    onState: (state, error) => states.push([state, error]),
    backoff: new Backoff({ baseMs: 20, capMs: 50 }),
    ...options,
  });
  cleanups.push(() => stream.stop());
  stream.start();
  return { stream, messages, states, records };
}

/** The origin of a loopback port nothing listens on: connections to it are refused. */
async function closedOrigin(): Promise<string> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return `http://127.0.0.1:${port}`;
}

describe('the stream client', () => {
  it('signs every connection attempt afresh and hands over the events', async () => {
    const server = await sseServer((_req, res, attempt) => {
      openStream(res);
      event(res, 'job', `job-${attempt}`, { jobId: `job-${attempt}` });
      event(res, 'ping', 'ping-1', { at: 'now' });
      if (attempt === 1) res.end(); // the coordinator restarts: the client must come back
    });
    cleanups.push(server.close);
    const { messages, states } = client(server.origin);
    await eventually(() => messages.filter((m) => m.event === 'job').length === 2);
    expect(messages.filter((m) => m.event === 'job').map((m) => [m.id, m.data])).toEqual([
      ['job-1', { jobId: 'job-1' }],
      ['job-2', { jobId: 'job-2' }],
    ]);
    expect(messages.find((m) => m.event === 'ping')).toEqual({ event: 'ping', id: 'ping-1', data: { at: 'now' } });
    expect(states.map((s) => s[0])).toEqual(['connecting', 'connected', 'disconnected', 'connecting', 'connected']);

    const [first, second] = server.requests;
    expect(first!['x-nonce']).not.toBe(second!['x-nonce']);
    for (const headers of [first!, second!]) {
      expect(headers['x-agent-id']).toBe(agentId);
      expect(headers.accept).toBe('text/event-stream');
      const message = canonicalRequest({
        method: 'GET',
        path: '/v1/agent/stream',
        timestamp: headers['x-timestamp'] as string,
        nonce: headers['x-nonce'] as string,
      });
      expect(
        verifyBytes(publicKeyFromBase64(keys.publicKey)!, Buffer.from(message), headers['x-signature'] as string),
      ).toBe(true);
    }
  });

  it('reconnects when the stream stays silent longer than the idle timeout (the watchdog)', async () => {
    const server = await sseServer((_req, res) => openStream(res)); // no event, no ping, ever
    cleanups.push(server.close);
    const { states, records } = client(server.origin, { idleTimeoutMs: 200 });
    await eventually(() => server.requests.length >= 3);
    expect(states.filter((s) => s[0] === 'disconnected')[0]![1]).toBe(
      'the stream dropped: nothing received from the coordinator for 200ms',
    );
    expect(records.some((r) => /nothing received from the coordinator for 200ms; reconnecting in/.test(r.msg))).toBe(
      true,
    );
  });

  it('takes any bytes as a sign of life: an event that arrives slowly, over more than the idle timeout, is read whole', async () => {
    const big = 'x'.repeat(6_000);
    const server = await sseServer((_req, res) => {
      openStream(res);
      const line = `event: job\nid: slow\ndata: ${JSON.stringify({ big })}\n\n`;
      let sent = 0;
      const timer = setInterval(() => {
        res.write(line.slice(sent, sent + 500)); // 500 characters every 50 ms: 600 ms for the event
        sent += 500;
        if (sent >= line.length) clearInterval(timer);
      }, 50);
      res.on('close', () => clearInterval(timer));
    });
    cleanups.push(server.close);
    const { messages, states } = client(server.origin, { idleTimeoutMs: 200 });
    await eventually(() => messages.length === 1);
    expect(messages[0]).toEqual({ event: 'job', id: 'slow', data: { big } });
    expect(states.filter((s) => s[0] === 'disconnected')).toEqual([]);
    expect(server.requests).toHaveLength(1);
  });

  it('drops the stream when an event grows past the cap without ending, and reconnects', async () => {
    let closed = false;
    const server = await sseServer((_req, res, attempt) => {
      openStream(res);
      if (attempt > 1) {
        event(res, 'ping', 'ping-1', { at: 'now' });
        return;
      }
      // `data:` lines without the blank line that would end the event, for as long as it is read.
      res.write('event: job\nid: endless\n');
      const timer = setInterval(() => res.write(`data: ${'x'.repeat(10_000)}\n`), 2);
      res.on('close', () => {
        clearInterval(timer);
        closed = true;
      });
    });
    cleanups.push(server.close);
    const { messages, states, records } = client(server.origin, { idleTimeoutMs: 30_000, maxEventChars: 100_000 });
    await eventually(() => messages.length === 1);
    expect(messages[0]).toMatchObject({ event: 'ping', id: 'ping-1' });
    await eventually(() => closed); // the connection was closed, not left to its writer
    const dropped =
      'the stream dropped: an event from the coordinator passed 100 KB without ending (the most the agent reads)';
    expect(states.filter((s) => s[0] === 'disconnected')[0]![1]).toBe(dropped);
    expect(records.filter((r) => r.level >= 40).map((r) => r.msg)).toEqual([
      expect.stringMatching(new RegExp(`^${dropped.replace(/[()]/g, '\\$&')}; reconnecting in \\d+ms$`)),
    ]);
  });

  it('keeps trying with backoff while the coordinator refuses or cannot be reached, and says why', async () => {
    const server = await sseServer((_req, res, attempt) => {
      if (attempt <= 2) {
        res.writeHead(401, { 'content-type': 'application/json' }).end('{"message":"nope"}');
        return;
      }
      openStream(res);
    });
    cleanups.push(server.close);
    const { states, stream } = client(server.origin);
    await eventually(() => stream.state === 'connected');
    expect(server.requests).toHaveLength(3);
    // The coordinator's reason, from the refusal's body (`The agent has been revoked`, say).
    expect(states.find((s) => s[0] === 'disconnected')![1]).toBe(
      'cannot open the stream: the coordinator refused the agent signature (HTTP 401: nope)',
    );

    const dead = client(await closedOrigin());
    await eventually(() => dead.states.some((s) => s[0] === 'disconnected'));
    expect(dead.states.find((s) => s[0] === 'disconnected')![1]).toMatch(/^cannot open the stream: /);
  });

  it('logs one readable line per failed attempt: what failed, the cause in plain words, when it tries again', async () => {
    const origin = await closedOrigin();
    const caller = { origin, agentId, privateKey: privateKeyFromBase64(keys.privateKey) };
    // As the daemon does: the workflows report before each attempt, failing the same way.
    const dead = client(origin, {
      beforeConnect: () => signedCall(caller, 'PUT', '/v1/agent/workflows', {}).then(() => {}),
    });
    await eventually(() => dead.records.filter((r) => r.level === 40).length >= 3);
    dead.stream.stop();
    const attempts = dead.states.filter((s) => s[0] === 'connecting').length;
    const lines = dead.records.filter((r) => r.level >= 40).map((r) => r.msg as string);
    expect(lines.length === attempts || lines.length === attempts - 1).toBe(true); // the last may be in flight
    for (const line of lines) {
      expect(line).toMatch(
        new RegExp(
          `^cannot open the stream: cannot reach ${origin.replace(/[.]/g, '\\.')}: connection refused ` +
            '\\(is the coordinator running, and is the port right\\?\\); reconnecting in \\d+ms$',
        ),
      );
    }
  });

  it('says in plain words that an open stream was cut, and reports a failed preparation once connected', async () => {
    const server = await sseServer((_req, res, attempt) => {
      openStream(res);
      if (attempt === 1) setTimeout(() => res.socket?.destroy(), 20);
    });
    cleanups.push(server.close);
    let prepared = 0;
    const { records, stream } = client(server.origin, {
      beforeConnect: async () => {
        prepared += 1;
        if (prepared === 1) throw new Error('the workflows report failed (HTTP 503: Service Unavailable)');
      },
    });
    await eventually(() => server.requests.length === 2 && stream.state === 'connected');
    expect(records.filter((r) => r.level >= 40).map((r) => r.msg)).toEqual([
      'connected, but the workflows report failed (HTTP 503: Service Unavailable)',
      expect.stringMatching(
        /^the stream dropped: the connection was cut \(other side closed\); reconnecting in \d+ms$/,
      ),
    ]);
  });

  it('opens the stream without waiting longer for reports that hang, and logs their late failure', async () => {
    const server = await sseServer((_req, res) => openStream(res));
    cleanups.push(server.close);
    let fail!: (error: Error) => void;
    const hung = new Promise<void>((_resolve, reject) => (fail = reject));
    const started = Date.now();
    const { stream, records } = client(server.origin, { beforeConnect: () => hung, prepareTimeoutMs: 300 });
    await eventually(() => stream.state === 'connected', 5_000);
    expect(Date.now() - started).toBeGreaterThanOrEqual(300);
    expect(server.requests[0]!['x-agent-id']).toBe(agentId);
    expect(records.filter((r) => r.level >= 40).map((r) => r.msg)).toEqual([
      'connected, but the reports made before connecting did not finish in 300ms; the stream was opened without waiting for them',
    ]);
    fail(new Error("the coordinator's answer to PUT /v1/agent/workflows did not finish in 120s; given up"));
    await eventually(() => records.filter((r) => r.level >= 40).length === 2);
    expect(records.at(-1)!.msg).toBe(
      "a report made before connecting failed after all: the coordinator's answer to PUT /v1/agent/workflows did not finish in 120s; given up",
    );
  });

  it('waits a second at least after a 503 with Retry-After 0 or a date already past (no loop of attempts)', async () => {
    const times: number[] = [];
    const server = await sseServer((_req, res, attempt) => {
      times.push(Date.now());
      if (attempt <= 3) {
        const retryAfter = attempt === 2 ? new Date(Date.now() - 60_000).toUTCString() : '0';
        res
          .writeHead(503, { 'content-type': 'application/json', 'retry-after': retryAfter })
          .end('{"code":"reconnect_shed"}');
        return;
      }
      openStream(res);
    });
    cleanups.push(server.close);
    // Jitter 0 and the backoff's top (base 20 ms, cap 50 ms here): the floor of a second wins.
    const { stream, records } = client(server.origin, { random: () => 0 });
    await eventually(() => stream.state === 'connected', 10_000);
    expect(times).toHaveLength(4);
    for (let i = 1; i < 4; i += 1) expect(times[i]! - times[i - 1]!).toBeGreaterThanOrEqual(1_000);
    expect(records.map((r) => r.msg)).toContain(
      'the coordinator is taking other agents back first (HTTP 503); reconnecting in 1s, it asked for 0ms',
    );
  });

  it('counts sheds toward the backoff: a shed agent slows down to the backoff when it exceeds what was asked', async () => {
    const server = await sseServer((_req, res) => {
      res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '0' }).end('{"code":"reconnect_shed"}');
    });
    cleanups.push(server.close);
    const { logger, records } = captureLogger();
    // The backoff at its top: 0.999 of 1.2 s, then of 2.4 s (its ceiling doubles with each shed).
    const stream = new StreamClient({
      origin: server.origin,
      agentId,
      privateKey: privateKeyFromBase64(keys.privateKey),
      logger,
      onMessage: () => {},
      backoff: new Backoff({ baseMs: 1_200, capMs: 10_000, random: () => 0.999 }),
      random: () => 0,
    });
    cleanups.push(() => stream.stop());
    stream.start();
    await eventually(() => records.length >= 2, 5_000);
    expect(records.slice(0, 2).map((r) => [r.msg, r.retryInMs])).toEqual([
      ['the coordinator is taking other agents back first (HTTP 503); reconnecting in 1.2s, it asked for 0ms', 1_198],
      ['the coordinator is taking other agents back first (HTTP 503); reconnecting in 2.4s, it asked for 0ms', 2_397],
    ]);
  });

  it('waits out a 503 with Retry-After as asked (within a second of jitter)', async () => {
    const times: number[] = [];
    const server = await sseServer((_req, res, attempt) => {
      times.push(Date.now());
      if (attempt === 1) {
        res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '1' }).end('{"code":"reconnect_shed"}');
        return;
      }
      openStream(res);
    });
    cleanups.push(server.close);
    // Jitter 0: the agent comes back exactly after the asked second (its backoff would be at most 20 ms).
    const { stream, records, states } = client(server.origin, { random: () => 0 });
    await eventually(() => stream.state === 'connected', 5_000);
    expect(times[1]! - times[0]!).toBeGreaterThanOrEqual(1_000);
    expect(states.find((s) => s[0] === 'disconnected')![1]).toBe(
      'the coordinator is taking other agents back first (HTTP 503)',
    );
    expect(records.map((r) => r.msg)).toContain(
      'the coordinator is taking other agents back first (HTTP 503); reconnecting in 1s, as it asked',
    );
  });

  it("spreads its first reconnect after a healthy stream over the stream's `retry` hint", async () => {
    const times: number[] = [];
    const server = await sseServer((_req, res, attempt) => {
      times.push(Date.now());
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('retry: 1200\n\n');
      event(res, 'ping', `ping-${attempt}`, { at: 'now' });
      if (attempt === 1) setTimeout(() => res.end(), 100); // healthy (open >= 50 ms), then cut
    });
    cleanups.push(server.close);
    // random() = 0.5: half the hint (600 ms), where the backoff alone would wait at most 20 ms.
    const { messages } = client(server.origin, { healthyAfterMs: 50, random: () => 0.5 });
    await eventually(() => messages.length === 2, 5_000);
    expect(times[1]! - times[0]!).toBeGreaterThanOrEqual(100 + 600);
    expect(times[1]! - times[0]!).toBeLessThan(100 + 1_200);
  });

  /** The claim of the two reports `claimingClient` makes. */
  const claim = `${reportDigest({ name: 'workflows' })}.${reportDigest({ name: 'labels' })}`;

  /**
   * A client whose workflows and labels reports are accepted as sent (`sent`, in order) and
   * claimed through the daemon's ReportClaims.
   */
  const claimingClient = (origin: string) => {
    const sent: string[] = [];
    const fixed = (name: string) => {
      let accepted: string | null = null;
      return {
        report: async () => {
          sent.push(name);
          accepted = reportDigest({ name });
        },
        claim: async () => accepted,
      };
    };
    const reports = new ReportClaims(fixed('workflows'), fixed('labels'));
    const opened = client(origin, {
      healthyAfterMs: 30,
      beforeConnect: () => reports.prepare(),
      onReportsChecked: (checks) => reports.checked(checks),
      onReportsOutdated: () => reports.outdated(),
    });
    return { sent, ...opened };
  };

  it('claims unchanged reports to a coordinator that checks them, and reports again at once when it refuses the claim', async () => {
    const paths: string[] = [];
    const server = await sseServer((req, res, attempt) => {
      paths.push(req.url!);
      if (attempt === 3) {
        res.writeHead(409, { 'content-type': 'application/json' }).end('{"code":"reports_outdated"}');
        return;
      }
      // The first coordinator does not check claims (an older version); the next ones do.
      res.writeHead(200, {
        'content-type': 'text/event-stream',
        ...(attempt > 1 ? { 'x-agent-reports': 'checked' } : {}),
      });
      event(res, 'ping', `ping-${attempt}`, { at: 'now' });
      if (attempt < 4) setTimeout(() => res.end(), 60); // healthy, then cut
    });
    cleanups.push(server.close);
    const { sent, messages, records } = claimingClient(server.origin);
    await eventually(() => messages.length === 3, 5_000);
    expect(paths).toEqual([
      '/v1/agent/stream', // reported before: the coordinator has not said it checks claims
      '/v1/agent/stream', // reported again: this older coordinator did not say so either
      `/v1/agent/stream?reports=${claim}`, // claimed: refused (409)
      '/v1/agent/stream', // reported again, at once
    ]);
    expect(sent).toEqual(['workflows', 'labels', 'workflows', 'labels', 'workflows', 'labels']);
    expect(records.map((r) => r.msg)).toContain(
      'the coordinator does not hold what this agent last reported: reporting again',
    );
    // Not a failure: no line says the attempt failed (the status, not a port that has 409 in it).
    expect(records.filter((r) => /(?<![\d:])409\b/.test(String(r.msg)))).toEqual([]);
  });

  it('reports again, and stops claiming, when a coordinator refuses the claim as an unknown parameter (an older version put back)', async () => {
    const paths: string[] = [];
    const server = await sseServer((req, res, attempt) => {
      paths.push(req.url!);
      if (req.url!.includes('reports=')) {
        // 0.1.0's stream: its query schema allows no other parameter.
        res.writeHead(422, { 'content-type': 'application/json' }).end('{"code":"validation_failed"}');
        return;
      }
      // The first coordinator checks claims; the one put back in its place (attempt 2 on) does not.
      res.writeHead(200, {
        'content-type': 'text/event-stream',
        ...(attempt === 1 ? { 'x-agent-reports': 'checked' } : {}),
      });
      event(res, 'ping', `ping-${attempt}`, { at: 'now' });
      if (attempt !== 2 && attempt < 4) setTimeout(() => res.end(), 60); // healthy, then cut
    });
    cleanups.push(server.close);
    const { sent, messages, records } = claimingClient(server.origin);
    await eventually(() => messages.length === 3, 5_000);
    expect(paths).toEqual([
      '/v1/agent/stream', // reported: a first connect
      `/v1/agent/stream?reports=${claim}`, // claimed: refused as an unknown parameter (422)
      '/v1/agent/stream', // reported again, at once
      '/v1/agent/stream', // and again: this coordinator does not say it checks claims
    ]);
    expect(sent).toEqual(['workflows', 'labels', 'workflows', 'labels', 'workflows', 'labels']);
    expect(records.map((r) => r.msg)).toContain(
      'the coordinator refused the claim of what this agent last reported (an older version?): reporting again',
    );
    expect(records.filter((r) => /(?<![\d:])422\b/.test(String(r.msg)))).toEqual([]);
  });

  it('stops for good when asked, without reconnecting', async () => {
    const server = await sseServer((_req, res) => openStream(res));
    cleanups.push(server.close);
    const { stream } = client(server.origin);
    await eventually(() => stream.state === 'connected');
    stream.stop();
    // Real time over real sockets: four times the longest reconnect delay (50 ms), and none came.
    await sleep(200);
    expect(server.requests).toHaveLength(1);
    expect(stream.state).toBe('disconnected');
  });
});

describe('backoff', () => {
  it('waits a random time up to an exponentially growing ceiling, capped, and starts over after reset', () => {
    const top = new Backoff({ baseMs: 100, capMs: 1000, random: () => 0.999999 });
    expect([1, 2, 3, 4, 5, 6].map(() => top.next())).toEqual([99, 199, 399, 799, 999, 999]);
    top.reset();
    expect(top.next()).toBe(99);
    const bottom = new Backoff({ baseMs: 100, capMs: 1000, random: () => 0 });
    expect(bottom.next()).toBe(0);
  });
});

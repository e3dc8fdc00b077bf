import type { Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import { eventually, sleep } from '../helpers/poll.js';
import { halfSentPost, openRaw, type RawConnection } from '../helpers/raw-socket.js';
import { storageClient, uploadFile, type PresignedUpload } from '../helpers/storage.js';

/**
 * Clients that never finish their request are answered 408 and cut off within the request
 * timeout; one address cannot hold more than its share of connections (docs/errors.md, 408).
 */

const TIMEOUT_MS = 600;
/** The sweep enforces a timeout at most a quarter of itself late; the rest is a slow machine's slack. */
const CLOSED_WITHIN_MS = TIMEOUT_MS * 1.25 + 1_500;

describe('slow clients', () => {
  let t: TestCoordinator;
  beforeAll(async () => {
    t = await startTestCoordinator({
      env: { DROVER_REQUEST_TIMEOUT_MS: String(TIMEOUT_MS), DROVER_MAX_CONNECTIONS_PER_CLIENT: '40' },
    });
  });
  afterAll(() => t?.close());

  async function expectCutOff(conn: RawConnection, openedAt: number, status: number | undefined = 408) {
    const closedAt = await conn.closed;
    expect(closedAt - openedAt).toBeGreaterThanOrEqual(TIMEOUT_MS - 50);
    expect(closedAt - openedAt).toBeLessThan(CLOSED_WITHIN_MS);
    expect(conn.status()).toBe(status);
    if (status === 408) {
      const body = JSON.parse(conn.received().split('\r\n\r\n')[1]!);
      expect(body).toMatchObject({ statusCode: 408, code: 'request_timeout' });
    }
  }

  it('answers 408 and closes a half-sent body on every kind of route', async () => {
    const paths = ['/v1/auth/login', '/v1/agent/enroll', '/v1/agent/workflows', '/v1/triggers/x/run', '/v1/nowhere'];
    const started = performance.now();
    const conns = await Promise.all(paths.map((p) => openRaw(t.url, halfSentPost(p), '127.0.0.3')));
    const statuses: (number | undefined)[] = [];
    for (const conn of conns) {
      // Refused before its body is read (an unsigned agent call, an unknown route), a request gets
      // that answer at once; its connection is still cut when the body never ends.
      const early = conn.status();
      await expectCutOff(conn, started, early ?? 408);
      statuses.push(conn.status());
    }
    expect(statuses).toEqual([408, 408, 408, 401, 408]);
  });

  it('closes a connection whose headers never end, and one that sends nothing', async () => {
    const started = performance.now();
    const partial = await openRaw(t.url, 'GET /v1/token HTTP/1.1\r\nhost: localhost\r\n', '127.0.0.3');
    const silent = await openRaw(t.url, '', '127.0.0.3');
    await expectCutOff(partial, started);
    const closedAt = await silent.closed;
    expect(closedAt - started).toBeLessThan(CLOSED_WITHIN_MS);
  });

  it('lets an upload take longer than the timeout while data flows, and cuts one that stalls', async () => {
    const client = await storageClient(t, null, ['write']);
    const presign = async () =>
      (await client.post<PresignedUpload>('/storage/files/presign-upload', { body: { cleanupRule: 'persistent' } }))
        .body;
    const size = 12;
    const head = (upload: PresignedUpload) => {
      const url = new URL(upload.uploadUrl);
      const headers = Object.entries(upload.headers).map(([k, v]) => `${k}: ${v}`);
      return [`PUT ${url.pathname}${url.search} HTTP/1.1`, 'host: localhost', `content-length: ${size}`, ...headers]
        .join('\r\n')
        .concat('\r\n\r\n');
    };

    const flowing = await presign();
    const slow = await openRaw(t.url, head(flowing), '127.0.0.4');
    const started = performance.now();
    for (let i = 0; i < size; i++) {
      // Real time: a slow client across a real socket is the subject (the server's timers judge it).
      await sleep(TIMEOUT_MS / 5);
      slow.socket.write('x');
    }
    expect(performance.now() - started).toBeGreaterThan(TIMEOUT_MS * 2);
    await expect.poll(() => slow.status(), { timeout: 5_000 }).toBe(200);
    slow.socket.destroy();

    const stalled = await openRaw(t.url, head(await presign()) + 'xyz', '127.0.0.4');
    const stalledAt = performance.now();
    await expectCutOff(stalled, stalledAt);
  });

  it('cuts a download whose client stopped reading', async () => {
    const client = await storageClient(t, null, ['read', 'write']);
    // Far more than the socket buffers of both ends hold: the coordinator is left with bytes to send.
    const size = 32 * 1024 * 1024;
    const { fileId } = await uploadFile(client, Buffer.alloc(size, 1));
    const url = new URL(
      (await client.get<{ downloadUrl: string }>(`/storage/files/${fileId}/download-url`)).body.downloadUrl,
    );
    // The coordinator's end of the connection: it is closed once the download is cut.
    const server = t.coordinator.app.server;
    const serverSide = new Promise<Socket>((resolve) => {
      const onConnection = (socket: Socket) => {
        server.off('connection', onConnection);
        resolve(socket);
      };
      server.on('connection', onConnection);
    });
    const reader = await openRaw(
      t.url,
      `GET ${url.pathname}${url.search} HTTP/1.1\r\nhost: localhost\r\n\r\n`,
      '127.0.0.4',
    );
    // Reads the answer's start, then nothing: it held the file, 2 MiB of buffers and the connection
    // for as long as it stayed connected.
    reader.socket.once('data', () => reader.socket.pause());
    const socket = await serverSide;
    await new Promise((resolve) => (socket.destroyed ? resolve(undefined) : socket.once('close', resolve)));
    reader.socket.resume();
    await reader.closed;
    expect(reader.status()).toBe(200);
    expect(Buffer.byteLength(reader.received(), 'utf8')).toBeLessThan(size);
    reader.socket.destroy();
  });
});

describe('connections per client address', () => {
  let t: TestCoordinator;
  beforeAll(async () => {
    t = await startTestCoordinator({ env: { DROVER_MAX_CONNECTIONS_PER_CLIENT: '40' } });
  });
  afterAll(() => t?.close());

  const statusOfGet = async (from: string) => {
    const conn = await openRaw(t.url, 'GET /v1/token HTTP/1.1\r\nhost: localhost\r\n\r\n', from);
    try {
      await expect.poll(() => conn.status(), { timeout: 5_000 }).toBeDefined();
      return conn.status();
    } finally {
      conn.socket.destroy();
    }
  };

  it('refuses connections over the per-address limit with 429, and serves other addresses', async () => {
    const held = await Promise.all(Array.from({ length: 40 }, () => openRaw(t.url, '', '127.0.0.5')));
    const over = await openRaw(t.url, '', '127.0.0.5');
    await over.closed;
    expect(over.status()).toBe(429);
    expect(JSON.parse(over.received().split('\r\n\r\n')[1]!)).toMatchObject({ code: 'rate_limited' });
    expect(await statusOfGet('127.0.0.6')).toBe(401);
    for (const conn of held) conn.socket.destroy();
    await Promise.all(held.map((c) => c.closed));
    await expect.poll(() => statusOfGet('127.0.0.5'), { timeout: 5_000 }).toBe(401);
  });
});

describe('a flood of half-sent bodies', () => {
  let t: TestCoordinator;
  beforeAll(async () => {
    t = await startTestCoordinator({
      env: { DROVER_REQUEST_TIMEOUT_MS: '1000', DROVER_MAX_CONNECTIONS_PER_CLIENT: '0' },
    });
  });
  afterAll(() => t?.close());

  it('keeps answering other clients and closes every one of them within the timeout', async () => {
    const count = 1_500;
    const started = performance.now();
    const flood: RawConnection[] = [];
    for (let i = 0; i < count; i += 100) {
      const wave = await Promise.all(
        Array.from({ length: 100 }, (_, j) =>
          openRaw(t.url, halfSentPost(j % 2 ? '/v1/auth/login' : '/v1/agent/enroll'), '127.0.0.7'),
        ),
      );
      flood.push(...wave);
    }
    const answered = await t.api.get('/token');
    expect(answered.status).toBe(401);
    const closedAt = await Promise.all(flood.map((c) => c.closed));
    expect(Math.max(...closedAt) - started).toBeLessThan(1_000 * 1.25 + 5_000);
    expect(flood.filter((c) => c.status() !== 408)).toEqual([]);
  });
});

describe('a shutdown', () => {
  it('does not wait for a connection that has sent nothing yet (a client that connected ahead of need)', async () => {
    // The default request timeout (30 s), which bounds such a connection otherwise.
    const t = await startTestCoordinator();
    try {
      const silent = await openRaw(t.url, '', '127.0.0.8');
      const started = performance.now();
      await t.close();
      expect(performance.now() - started).toBeLessThan(5_000);
      expect(await silent.closed).toBeLessThan(started + 5_000);
      expect(silent.received()).toBe('');
    } finally {
      await t.close();
    }
  });

  it('closes the connection of a request answered after it began, rather than keeping it alive (72 s)', async () => {
    const t = await startTestCoordinator();
    try {
      // A sign-in whose body is still coming when the shutdown begins: answered, then closed.
      const body = JSON.stringify({ email: 'nobody@example.test', password: 'not the password' });
      const head = halfSentPost('/v1/auth/login', body.length, 1, { expect: '100-continue' }); // and its `{`
      const conn = await openRaw(t.url, head, '127.0.0.9');
      await eventually(() => conn.received().startsWith('HTTP/1.1 100 Continue'));
      const started = performance.now();
      const closing = t.close();
      // The shutdown has begun (its preClose hooks ran, then the listener closed) before the rest comes.
      await eventually(() => !t.coordinator.app.server.listening);
      conn.socket.write(body.slice(1));
      await closing;
      expect(performance.now() - started).toBeLessThan(5_000);
      expect(await conn.closed).toBeLessThan(started + 5_000);
      // Answered, telling the client the connection ends with it.
      expect(conn.received()).toMatch(/\r\n\r\nHTTP\/1\.1 401 [^]*\r\nconnection: close\r\n/i);
    } finally {
      await t.close();
    }
  });
});

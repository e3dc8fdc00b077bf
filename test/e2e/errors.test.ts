import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { gzipSync } from 'node:zlib';
import { ErrorCodes } from '@drover/coordinator';
import { OWNER_EMAIL, OWNER_PASSWORD, startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import type { ApiResponse } from '../helpers/http.js';
import { eventually } from '../helpers/poll.js';
import { halfSentPost, openRaw, parseResponses } from '../helpers/raw-socket.js';

/** The one error model (CONTRACT §2, docs/errors.md) as a client sees it. */

const BODY_LIMIT = 4096;

/** Asserts the exact error body: `{statusCode, code, message}`, plus `details` only on 422. */
function expectError(res: ApiResponse, status: number, code: string): void {
  expect(res.status, res.text).toBe(status);
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  const keys = status === 422 ? ['code', 'details', 'message', 'statusCode'] : ['code', 'message', 'statusCode'];
  expect(Object.keys(res.body).sort()).toEqual(keys);
  expect(res.body.statusCode).toBe(status);
  expect(res.body.code).toBe(code);
  expect(typeof res.body.message).toBe('string');
  expect(res.body.message.length).toBeGreaterThan(0);
  if (status === 422) {
    expect(Array.isArray(res.body.details)).toBe(true);
    expect(res.body.details.length).toBeGreaterThan(0);
    for (const detail of res.body.details) {
      expect(Object.keys(detail).sort()).toEqual(['message', 'path']);
      expect(typeof detail.path).toBe('string');
      expect(typeof detail.message).toBe('string');
    }
  }
  expect(res.text).not.toMatch(/\bat .+:\d+:\d+|node_modules|SQLITE|SELECT |INSERT |stack/i);
}

describe('error responses', () => {
  let t: TestCoordinator;
  beforeAll(async () => {
    t = await startTestCoordinator({ env: { DROVER_BODY_LIMIT_BYTES: String(BODY_LIMIT) } });
  });
  afterAll(() => t?.close());

  const login = (init: { rawBody?: string | Uint8Array; body?: unknown; headers?: Record<string, string> }) =>
    t.api.post('/auth/login', { token: null, ...init });

  it('answers malformed JSON with 422 validation_failed', async () => {
    for (const raw of ['{"email":', '{email: "a"}', "{'a':1}", '{"a":1}}', 'nul', '\u0000']) {
      const res = await login({ rawBody: raw, headers: { 'content-type': 'application/json' } });
      expectError(res, 422, 'validation_failed');
      expect(res.body.details).toEqual([{ path: 'body', message: 'is not valid JSON' }]);
    }
  });

  it('answers a prototype-poisoning body with 422 saying so, not 500', async () => {
    for (const raw of [
      '{"email":"a@b.test","password":"x","__proto__":{"admin":true}}',
      '{"email":"a@b.test","password":"x","p":{"constructor":{"prototype":"x"}}}',
    ]) {
      const res = await login({ rawBody: raw, headers: { 'content-type': 'application/json' } });
      expectError(res, 422, 'validation_failed');
      expect(res.body.details).toEqual([{ path: 'body', message: 'has a "__proto__" or "constructor.prototype" key' }]);
    }
  });

  it('answers an empty JSON body on a route that needs one with 422', async () => {
    const res = await login({ rawBody: '', headers: { 'content-type': 'application/json' } });
    expectError(res, 422, 'validation_failed');
  });

  it('answers a missing body on a route that needs one with 422', async () => {
    expectError(await t.api.post('/auth/login', { token: null }), 422, 'validation_failed');
  });

  it('answers an array, a string or null where an object is expected with 422', async () => {
    for (const body of [[], ['a@b.test', 'pw'], 'a@b.test', 42, null]) {
      expectError(await login({ body }), 422, 'validation_failed');
    }
  });

  it('answers wrong field types, unknown fields and missing fields with 422 naming each', async () => {
    const res = await login({ body: { email: 7, password: ['x'], admin: true } });
    expectError(res, 422, 'validation_failed');
    const paths = res.body.details.map((d: { path: string }) => d.path);
    expect(paths).toEqual(expect.arrayContaining(['body.email', 'body.password', 'body.admin']));
    const missing = await login({ body: {} });
    expectError(missing, 422, 'validation_failed');
    expect(missing.body.details).toEqual(
      expect.arrayContaining([
        { path: 'body.email', message: 'is required' },
        { path: 'body.password', message: 'is required' },
      ]),
    );
  });

  it('answers a huge string within the body limit with 422 and does not echo it', async () => {
    const huge = 'x'.repeat(BODY_LIMIT - 100);
    const res = await login({ body: { email: huge, password: 'password' } });
    expectError(res, 422, 'validation_failed');
    expect(res.text.length).toBeLessThan(1000);
  });

  it('answers deeply nested JSON with 422', async () => {
    const depth = 1000;
    const raw = `{"email":${'['.repeat(depth)}${']'.repeat(depth)},"password":"password"}`;
    expect(raw.length).toBeLessThan(BODY_LIMIT);
    const res = await login({ rawBody: raw, headers: { 'content-type': 'application/json' } });
    expectError(res, 422, 'validation_failed');
  });

  it('answers a body over the limit with 413 payload_too_large, naming the limit and its setting', async () => {
    const res = await login({ body: { email: 'a@b.test', password: 'p'.repeat(BODY_LIMIT) } });
    expectError(res, 413, 'payload_too_large');
    expect(res.body.message).toBe(
      `The request body is larger than the limit of ${BODY_LIMIT} bytes (the setting DROVER_BODY_LIMIT_BYTES); files go through presigned URLs`,
    );
  });

  it('reads a body as JSON whatever its content type, and refuses one that is not JSON with 422', async () => {
    const credentials = JSON.stringify({ email: 'nobody@example.test', password: 'password' });
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/octet-stream']) {
      // Understood: the credentials are checked (and wrong).
      expectError(await login({ rawBody: credentials, headers: { 'content-type': type } }), 401, 'unauthorized');
    }
    const cases: [string, string][] = [
      ['application/x-www-form-urlencoded', 'email=a%40b.test&password=password'],
      [
        'multipart/form-data; boundary=xyz',
        '--xyz\r\nContent-Disposition: form-data; name="email"\r\n\r\na\r\n--xyz--\r\n',
      ],
      ['application/xml', '<login/>'],
    ];
    for (const [type, raw] of cases) {
      const res = await login({ rawBody: raw, headers: { 'content-type': type } });
      expectError(res, 422, 'validation_failed');
      expect(res.body.details).toEqual([{ path: 'body', message: 'is not valid JSON' }]);
    }
  });

  it('refuses a query parameter an operation does not know, the sign-in calls too', async () => {
    for (const [method, path] of [
      ['GET', '/auth/session'],
      ['POST', '/auth/login'],
      ['POST', '/auth/logout'],
      ['POST', '/auth/device'],
      ['GET', '/auth/methods'],
    ] as const) {
      const body = path === '/auth/login' ? { email: 'a@b.test', password: 'not checked' } : {};
      const res = await t.owner.request(method, `${path}?zzz=1`, method === 'GET' ? {} : { body });
      expectError(res, 422, 'validation_failed');
      expect(res.body.details, `${method} ${path}`).toContainEqual({
        path: 'querystring.zzz',
        message: 'is not a known field',
      });
    }
  });

  it("reads a query's whole numbers in decimal digits only, not as JavaScript's Number() would", async () => {
    for (const limit of ['0x10', '1e1', '%205%20', '%2B5', '007', '', 'Infinity', '99999999999999999999', '1.0']) {
      const res = await t.owner.get(`/orgs/${t.orgId}/jobs?limit=${limit}`);
      expectError(res, 422, 'validation_failed');
      expect(res.body.details, limit).toEqual([
        {
          path: 'querystring.limit',
          message: expect.stringMatching(/^must be a whole number in decimal digits, got /),
        },
      ]);
    }
    expect((await t.owner.get(`/orgs/${t.orgId}/jobs?limit=10`)).status).toBe(200);
    // The schema's own bounds still apply after.
    expect((await t.owner.get(`/orgs/${t.orgId}/jobs?limit=0`)).status).toBe(422);
  });

  it('refuses a compressed body with 415, naming the encoding, rather than calling it not JSON', async () => {
    const json = JSON.stringify({ name: 'zipped' });
    for (const [encoding, rawBody] of [
      ['gzip', gzipSync(json)],
      ['br', Buffer.from(json)],
    ] as const) {
      const res = await t.owner.post('/orgs', {
        rawBody,
        headers: { 'content-type': 'application/json', 'content-encoding': encoding },
      });
      expectError(res, 415, 'unsupported_encoding');
      expect(res.body.message).toBe(
        `The body is sent with Content-Encoding "${encoding}"; the API takes bodies uncompressed only`,
      );
    }
    const plain = await t.owner.post('/orgs', {
      rawBody: json,
      headers: { 'content-type': 'application/json', 'content-encoding': 'identity' },
    });
    expect(plain.status).toBe(201);
  });

  it('refuses an integer beyond 2^53 that JSON.parse rounded (…993 to …992), saying what the field takes', async () => {
    const post = (url: string, rawBody: string) =>
      t.owner.post(url, { rawBody, headers: { 'content-type': 'application/json' } });
    const beyond = 'beyond 9007199254740991 (2^53 − 1)';
    const triggers = `/orgs/${t.orgId}/triggers`;
    const releases = `/orgs/${t.orgId}/apps/${randomUUID()}/releases`;
    const trigger = (field: string) =>
      `{"name":"n","scopeType":"workflow","workflowName":"w","responseMode":"async",${field}}`;
    for (const [url, rawBody, path, message] of [
      // A field that may take a string (a cron trigger's params, which its workflow's schema judges).
      [
        triggers,
        trigger('"params":{"ids":[1, -12345678901234567891]}'),
        'body.params.ids.1',
        `is the integer -12345678901234567891, ${beyond}: it cannot be kept exactly; send it as a string where one is taken`,
      ],
      // A number only: its bound, as the schema says of an exact one.
      [
        releases,
        '{"version":"1","artifactFileId":"00000000-0000-4000-8000-000000000000","sequence":9007199254740993}',
        'body.sequence',
        'is the integer 9007199254740993: must be at most 9007199254740991',
      ],
      [
        triggers,
        trigger('"maxParallel":12345678901234567891'),
        'body.maxParallel',
        'is the integer 12345678901234567891: must be at most 100000',
      ],
      [
        triggers,
        trigger('"maxParallel":-9007199254740993'),
        'body.maxParallel',
        'is the integer -9007199254740993: must be at least 1',
      ],
    ] as const) {
      const res = await post(url, rawBody);
      expectError(res, 422, 'validation_failed');
      expect(res.body.details).toEqual([{ path, message }]);
    }
    // A field that takes no number is the schema's to refuse (an unknown one, a string one).
    expect((await post('/orgs', '{"name":9007199254740993}')).body.details).toEqual([
      { path: 'body.name', message: 'must be a string' },
    ]);
    // Kept as sent: the digits in a string, an integer a double holds exactly, a number written
    // with an exponent (the schema refuses the unknown field, not the number).
    const kept = await t.owner.post<{ name: string }>('/orgs', { body: { name: 'lab 9007199254740993' } });
    expect(kept.body.name).toBe('lab 9007199254740993');
    for (const n of ['9007199254740993', '9007199254740992', '1.7976931348623157e308', '12345678901234567890.5']) {
      expect((await post('/orgs', `{"name":"y","n":${n}}`)).body.details).toEqual([
        { path: 'body.n', message: 'is not a known field' },
      ]);
    }
  });

  it('refuses text that is not Unicode, never storing U+FFFD in its place', async () => {
    // A lone surrogate escaped in JSON, in a value and in a nested one.
    for (const [rawBody, path] of [
      ['{"name":"x\\ud800y"}', 'body.name'],
      ['{"name":"ok","labels":{"a":"\\udc00"}}', 'body.labels.a'],
    ] as const) {
      const res = await t.owner.post('/orgs', { rawBody, headers: { 'content-type': 'application/json' } });
      expectError(res, 422, 'validation_failed');
      expect(res.body.details).toEqual([{ path, message: 'is not valid Unicode text (a lone surrogate)' }]);
    }
    // Bytes that are not UTF-8 (Latin-1 é).
    const latin1 = await t.owner.post('/orgs', {
      rawBody: Buffer.from('{"name":"caf\xe9"}', 'latin1'),
      headers: { 'content-type': 'application/json; charset=iso-8859-1' },
    });
    expectError(latin1, 422, 'validation_failed');
    expect(latin1.body.details).toEqual([{ path: 'body', message: 'is not valid UTF-8' }]);
    // A well-formed pair is kept as sent.
    const emoji = await t.owner.post<{ name: string }>('/orgs', {
      rawBody: '{"name":"caf\\u00e9 \\ud83d\\ude00"}',
      headers: { 'content-type': 'application/json' },
    });
    expect([emoji.status, emoji.body.name]).toEqual([201, 'café 😀']);
  });

  it('takes an empty body with any content type as no body', async () => {
    const res = await t.api.post('/auth/login', {
      token: null,
      rawBody: '',
      headers: { 'content-type': 'text/plain' },
    });
    expectError(res, 422, 'validation_failed');
    expect(res.body.details).toEqual([{ path: 'body', message: 'must be an object' }]);
  });

  it('accepts application/json with a charset parameter', async () => {
    const res = await login({
      rawBody: JSON.stringify({ email: 'nobody@example.test', password: 'password' }),
      headers: { 'content-type': 'application/json; charset=utf-8' },
    });
    expectError(res, 401, 'unauthorized');
  });

  it('answers a known path called with another method with 405 and the methods it takes', async () => {
    const login = await t.api.delete('/auth/login');
    expectError(login, 405, 'method_not_allowed');
    expect(login.headers.get('allow')).toBe('POST');
    const job = await t.api.put(`/jobs/${randomUUID()}`, { body: {} });
    expectError(job, 405, 'method_not_allowed');
    expect(job.headers.get('allow')).toBe('GET, HEAD');
    const trigger = await t.api.get(`/orgs/${randomUUID()}/triggers/${randomUUID()}/`);
    expect(trigger.status).not.toBe(405);
    const tokens = await t.api.patch(`/orgs/${randomUUID()}/api-tokens`, { body: {} });
    expect(tokens.headers.get('allow')).toBe('GET, HEAD, POST');
  });

  it('answers unknown routes with 404 not_found', async () => {
    expectError(await t.api.get('/no-such-thing'), 404, 'not_found');
    expectError(await t.api.delete('/no-such-thing'), 404, 'not_found');
    const outside = await fetch(`${t.url}/not-v1`);
    expectError(
      {
        status: outside.status,
        headers: outside.headers,
        text: await outside.clone().text(),
        body: await outside.json(),
      },
      404,
      'not_found',
    );
  });

  it('answers a resource the caller cannot see, and an id that is not an id, with 404', async () => {
    expectError(await t.owner.get(`/orgs/${randomUUID()}`), 404, 'not_found');
    expectError(await t.owner.get('/orgs/not-a-uuid'), 404, 'not_found');
    expectError(await t.owner.get(`/orgs/${'a'.repeat(201)}`), 404, 'not_found');
  });

  it('finds a resource by the upper-case spelling of its id', async () => {
    const [org] = (await t.owner.get('/orgs')).body as { id: string }[];
    const res = await t.owner.get(`/orgs/${org!.id.toUpperCase()}`);
    expect(res.status).toBe(200);
    expect(res.body.id).toBe(org!.id);
  });

  it('answers a URL with a malformed percent-encoding with 400 bad_request and a request id', async () => {
    const res = await t.api.get('/token%E0%A4%A');
    expectError(res, 400, 'bad_request');
    expect(res.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('answers a query string with a malformed percent-encoding with 400, where it was taken as text', async () => {
    const [org] = (await t.owner.get('/orgs')).body as { id: string }[];
    for (const query of ['status=%E0%A4%A', 'status=%zz', '%ff=queued']) {
      const res = await t.owner.get(`/orgs/${org!.id}/jobs?${query}`);
      expectError(res, 400, 'bad_request');
      expect(res.body.message).toContain('query string has a malformed percent-encoding');
    }
    // Well-formed encodings, and a literal '+', still read as they always did.
    expect((await t.owner.get(`/orgs/${org!.id}/jobs?status=%71ueued&limit=5`)).status).toBe(200);
  });

  it('reads what a client still sends after refusing its request line, so that the answer is not lost to a reset', async () => {
    const body = Buffer.alloc(2 * 1024 * 1024, 'x');
    const refused = await sendAfterAnswer(
      t.url,
      `GET /v1/orgs/\u00ff\u00ff/apps HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`,
      body,
    );
    expect(refused).toEqual({ statusLine: 'HTTP/1.1 400 Bad Request', reset: false });
  });

  it('answers a request HTTP cannot read in the error shape, then closes the connection', async () => {
    const mismatched = await rawExchange(
      t.url,
      'POST /v1/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n' +
        'Content-Length: 5\r\nContent-Length: 6\r\n\r\n{"a":1}',
    );
    expect(mismatched.status).toBe(400);
    expect(JSON.parse(mismatched.body)).toEqual({
      statusCode: 400,
      code: 'bad_request',
      message: expect.stringMatching(/not valid HTTP/),
    });
    expect(mismatched.head).toMatch(/\r\nx-request-id: [0-9a-f-]{36}\r\n/);
    const oversized = await rawExchange(
      t.url,
      `GET /v1/token HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
    );
    expect(oversized.status).toBe(431);
    expect(JSON.parse(oversized.body)).toMatchObject({ statusCode: 431, code: 'headers_too_large' });
  });

  it('answers a HEAD that HTTP cannot read with the headers of the refusal and no body, as HEAD answers are', async () => {
    const unreadable = [
      { request: 'HEAD /v1/orgs/\u00ff HTTP/1.1\r\nHost: x\r\n\r\n', status: 400 },
      { request: `HEAD /v1/token HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, status: 431 },
    ];
    for (const { request, status } of unreadable) {
      const res = await rawExchange(t.url, request);
      expect(res.status).toBe(status);
      expect(res.head).toMatch(/\r\ncontent-type: application\/json; charset=utf-8\r\n/);
      expect(res.body).toBe('');
    }
    // So a client that knows it sent a HEAD reads the refusal, rather than failing on stray bytes.
    const seen = await new Promise<number | string>((resolve) => {
      const req = http.request(`${t.url}/v1/token`, { method: 'HEAD', headers: { 'x-big': 'a'.repeat(20_000) } });
      req.on('response', (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      });
      req.on('error', (error) => resolve(error.message));
      req.end();
    });
    expect(seen).toBe(431);
  });

  it('answers missing and garbage credentials with 401 unauthorized', async () => {
    expectError(await t.api.get('/orgs'), 401, 'unauthorized');
    expectError(await t.api.get('/orgs', { token: 'x'.repeat(5000) }), 401, 'unauthorized');
    expectError(await t.api.get('/token', { token: 'drv_nope' }), 401, 'unauthorized');
  });

  it('puts a request id on every answer, the caller’s own when it is acceptable', async () => {
    const mine = await t.api.get('/no-such-thing', { headers: { 'x-request-id': 'trace-abc.123' } });
    expect(mine.headers.get('x-request-id')).toBe('trace-abc.123');
    const unsafe = await t.api.get('/no-such-thing', { headers: { 'x-request-id': 'bad id\twith spaces' } });
    expect(unsafe.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('answers an unexpected failure with 500 internal and discloses nothing', async () => {
    const users = t.coordinator.ctx.repos.users;
    const spy = vi
      .spyOn(users, 'findByEmail')
      .mockRejectedValue(new Error('SQLITE_CORRUPT: database disk image is malformed in SELECT * FROM users'));
    try {
      const res = await login({ body: { email: 'a@b.test', password: 'password' } });
      expectError(res, 500, 'internal');
      expect(res.body).toEqual({ statusCode: 500, code: 'internal', message: 'Internal server error' });
    } finally {
      spy.mockRestore();
    }
  });
});

/** Sends raw bytes on a new connection and reads the answer until the server closes it. */
/**
 * Sends `head`, then `body` in two halves, the second once the answer has come; resolves with the
 * answer's status line and whether the connection was reset under the second half (a server that
 * closed it with unread bytes: the kernel resets it, and a client may lose the answer).
 */
async function sendAfterAnswer(
  url: string,
  head: string,
  body: Buffer,
): Promise<{ statusLine: string; reset: boolean }> {
  const { hostname, port } = new URL(url);
  const socket = net.connect(Number(port), hostname);
  let text = '';
  let reset = false;
  socket.on('error', () => (reset = true));
  const answered = new Promise<void>((resolve) =>
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString('latin1');
      if (text.includes('\r\n\r\n')) resolve();
    }),
  );
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  socket.write(head);
  socket.write(body.subarray(0, body.length / 2));
  await answered;
  await new Promise((resolve) => setTimeout(resolve, 200));
  socket.end(body.subarray(body.length / 2));
  await closed;
  return { statusLine: text.split('\r\n')[0]!, reset };
}

async function rawExchange(url: string, request: string): Promise<{ status: number; head: string; body: string }> {
  const { hostname, port } = new URL(url);
  const socket = net.connect(Number(port), hostname);
  socket.end(request);
  let text = '';
  for await (const chunk of socket) text += (chunk as Buffer).toString('latin1');
  const [head = '', body = ''] = text.split('\r\n\r\n');
  return { status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1]), head: `${head}\r\n`, body };
}

describe('error responses with the default body limit', () => {
  let t: TestCoordinator;
  beforeAll(async () => {
    t = await startTestCoordinator();
  });
  afterAll(() => t?.close().catch(() => {}));

  it('answers JSON nested 100,000 deep with 422, prototype keys inside or not', async () => {
    const depth = 100_000;
    for (const inner of ['1', '{"__proto__":{"x":1}}', '{"constructor":{"prototype":{"x":1}}}']) {
      for (const [open, close] of [
        ['{"a":', '}'],
        ['[', ']'],
      ]) {
        const raw = `{"email":${open!.repeat(depth)}${inner}${close!.repeat(depth)},"password":"password"}`;
        const res = await t.api.post('/auth/login', { rawBody: raw, headers: { 'content-type': 'application/json' } });
        expectError(res, 422, 'validation_failed');
      }
    }
    // Deeper than the checks of strings and numbers go (JSON.parse goes deeper): said so, not
    // mistaken for another fault.
    for (const inner of ['"\\ud800"', '12345678901234567891']) {
      const raw = `{"name":"z","n":${'['.repeat(200_000)}${inner}${']'.repeat(200_000)}}`;
      const res = await t.owner.post('/orgs', { rawBody: raw, headers: { 'content-type': 'application/json' } });
      expect(res.body.details).toEqual([{ path: 'body', message: 'is nested too deeply' }]);
    }
  });

  // Last: it leaves this coordinator without a database.
  it('answers without internals when the database is gone: 500 on SQLite, 503 on PostgreSQL', async () => {
    await t.loseDatabase();
    const res = await t.owner.get('/orgs');
    if (process.env.DROVER_TEST_DATABASE === 'postgres') {
      // The database dropped: the server refuses the pool's new connections, as when it is down.
      expectError(res, 503, 'unavailable');
      expect(res.body.message).toBe('The database could not be reached; try again shortly');
    } else {
      // The file closed under the coordinator: no outage a retry would outlast, a fault.
      expectError(res, 500, 'internal');
      expect(res.body.message).toBe('Internal server error');
    }
  });
});

describe('error responses during shutdown', () => {
  it('answers a request that arrives on an open connection while the server closes with 503 unavailable', async () => {
    const t = await startTestCoordinator();
    try {
      // A sign-in whose body is still coming when the shutdown begins; the rest of its body comes
      // with a second request pipelined behind it on the same connection.
      const body = JSON.stringify({ email: OWNER_EMAIL, password: OWNER_PASSWORD });
      const conn = await openRaw(t.url, halfSentPost('/v1/auth/login', body.length, 1, { expect: '100-continue' }));
      await eventually(() => conn.received().startsWith('HTTP/1.1 100 Continue'));
      const closing = t.close();
      // The shutdown has begun (its preClose hooks ran, then the listener closed) before the rest comes.
      await eventually(() => !t.coordinator.app.server.listening);
      conn.socket.write(`${body.slice(1)}GET /v1/no-such-thing HTTP/1.1\r\nhost: localhost\r\n\r\n`);
      await closing;
      await conn.closed;
      const [signIn, behind, ...more] = parseResponses(conn.received().replace(/^HTTP\/1\.1 100 Continue\r\n\r\n/, ''));
      expect(more).toEqual([]);
      // The request in flight is answered, its connection kept for the one behind it...
      expect(signIn?.status).toBe(200);
      expect(signIn?.headers.get('connection')).toBe('keep-alive');
      // ...which is refused in the error shape, and the connection closed after it.
      const { status, headers, text } = behind!;
      expectError({ status, headers, text, body: JSON.parse(text) }, 503, 'unavailable');
      expect(headers.get('connection')).toBe('close');
    } finally {
      await t.close();
    }
  });
});

describe('docs/errors.md', () => {
  const doc = fs.readFileSync(new URL('../../docs/errors.md', import.meta.url), 'utf8');

  it('documents every error code with its status', () => {
    for (const [code, { status }] of Object.entries(ErrorCodes)) {
      expect(doc, `docs/errors.md lacks a row for ${code}`).toMatch(
        new RegExp(`^\\| \`${code}\` +\\| ${status} +\\|`, 'm'),
      );
    }
  });

  it('documents the three 429 shapes of the spec', () => {
    for (const field of ['retryAfter', 'window', '"Too Many Requests"', '"token_read"', 'observed']) {
      expect(doc).toContain(field);
    }
  });
});

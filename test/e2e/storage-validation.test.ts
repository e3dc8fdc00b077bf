import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import type { ApiClient, ApiResponse } from '../helpers/http.js';
import { defaultBindingId, storageClient, uploadFile } from '../helpers/storage.js';

/** Every bad input to the storage API is a 422 (or 415) with the error body, never a 500. */

function expect422(res: ApiResponse, path?: string): void {
  expect(res.status, res.text).toBe(422);
  expect(res.body).toMatchObject({ statusCode: 422, code: 'validation_failed', message: expect.any(String) });
  expect(Array.isArray(res.body.details)).toBe(true);
  if (path) expect(res.body.details.map((d: { path: string }) => d.path)).toContain(path);
}

describe('storage input validation', () => {
  let t: TestCoordinator;
  let client: ApiClient;
  let bindingId: string;
  beforeAll(async () => {
    // Port 9 of the loopback (where nothing listens) is the one host of its own networks a binding may use here.
    t = await startTestCoordinator({ env: { DROVER_STORAGE_ALLOWED_HOSTS: '127.0.0.1:9' } });
    bindingId = await defaultBindingId(t);
    client = await storageClient(t, [bindingId], ['read', 'write', 'delete']);
  });
  afterAll(() => t?.close());

  const presign = (body: unknown) => client.post('/storage/files/presign-upload', { body });

  it('refuses wrong types, unknown fields and a missing cleanupRule', async () => {
    const cases: [unknown, string][] = [
      [{}, 'body.cleanupRule'],
      [{ cleanupRule: 'persistent', extra: 1 }, 'body.extra'],
      [{ cleanupRule: 7 }, 'body.cleanupRule'],
      [{ cleanupRule: 'persistent', filename: 12 }, 'body.filename'],
      [{ cleanupRule: 'persistent', contentType: ['text/plain'] }, 'body.contentType'],
      [{ cleanupRule: 'ttl', ttlSeconds: '3600' }, 'body.ttlSeconds'],
      [{ cleanupRule: 'ttl', ttlSeconds: 90.5 }, 'body.ttlSeconds'],
      [{ cleanupRule: 'persistent', bindingId: 'not-a-uuid' }, 'body.bindingId'],
      [{ cleanupRule: 'persistent', bindingId: null }, 'body.bindingId'],
    ];
    for (const [body, path] of cases) expect422(await presign(body), path);
    expect422(await presign([]));
    expect422(await presign(null));
  });

  it('refuses on_job_end and any rule other than ttl and persistent', async () => {
    for (const cleanupRule of ['on_job_end', 'forever', ''])
      expect422(await presign({ cleanupRule }), 'body.cleanupRule');
  });

  it('keeps ttlSeconds from 60 seconds to 90 days, and only with ttl', async () => {
    for (const ttlSeconds of [59, 0, -60, 90 * 86400 + 1, 1e12]) {
      const res = await presign({ cleanupRule: 'ttl', ttlSeconds });
      expect422(res, 'body.ttlSeconds');
    }
    const range = await presign({ cleanupRule: 'ttl', ttlSeconds: 59 });
    expect(range.body.message).toContain('from 60 (1 minute) to 7776000 (90 days)');
    for (const ttlSeconds of [60, 90 * 86400])
      expect((await presign({ cleanupRule: 'ttl', ttlSeconds })).status).toBe(201);
    const persistent = await presign({ cleanupRule: 'persistent', ttlSeconds: 3600 });
    expect422(persistent, 'body.ttlSeconds');
    expect(persistent.body.message).toContain('only with cleanupRule "ttl"');
  });

  it('keeps filename and contentType to 255 characters and refuses what cannot be a filename or MIME type', async () => {
    expect(
      (await presign({ cleanupRule: 'persistent', filename: 'f'.repeat(255), contentType: `a/${'b'.repeat(253)}` }))
        .status,
    ).toBe(201);
    expect422(await presign({ cleanupRule: 'persistent', filename: 'f'.repeat(256) }), 'body.filename');
    expect422(await presign({ cleanupRule: 'persistent', filename: 'x'.repeat(100_000) }), 'body.filename');
    expect422(await presign({ cleanupRule: 'persistent', contentType: `a/${'b'.repeat(254)}` }), 'body.contentType');
    for (const filename of ['', 'line\nbreak', 'nul\u0000', 'bell\u0007', 'lone \ud800 surrogate']) {
      expect422(await presign({ cleanupRule: 'persistent', filename }), 'body.filename');
    }
    for (const contentType of ['text', 'text/plain\r\nX-Evil: 1', 'a b/c', '/x', 'text/plain; charset']) {
      expect422(await presign({ cleanupRule: 'persistent', contentType }), 'body.contentType');
    }
    // A filename is a label: path-like names are kept as given and never touch the disk.
    const res = await presign({
      cleanupRule: 'persistent',
      filename: '../../etc/passwd',
      contentType: 'text/plain; charset="utf-8"',
    });
    expect(res.status).toBe(201);
    const meta = await client.get(`/storage/files/${res.body.fileId}`);
    expect(meta.body).toMatchObject({ filename: '../../etc/passwd', contentType: 'text/plain; charset="utf-8"' });
  });

  it('takes the upper-case spelling of a binding id in a body, a query and a grant as the id itself', async () => {
    const upper = bindingId.toUpperCase();
    const presigned = await presign({ cleanupRule: 'persistent', bindingId: upper });
    expect(presigned.status, presigned.text).toBe(201);
    const { fileId } = await uploadFile(client, 'upper', { cleanupRule: 'persistent', bindingId: upper });
    const file = await client.get(`/storage/files/${fileId}`);
    expect(file.body.bindingId).toBe(bindingId);
    const listed = await client.get(`/storage/files?bindingId=${upper}`);
    expect(listed.status).toBe(200);
    expect(listed.body.map((f: { id: string }) => f.id)).toContain(fileId);
    const granted = await storageClient(t, [upper], ['read']);
    expect((await granted.get(`/storage/files/${fileId}`)).status).toBe(200);
    const tokens = await t.owner.get(`/orgs/${t.orgId}/api-tokens`);
    expect(JSON.stringify(tokens.body)).not.toContain(upper);
  });

  it('refuses a bindingId the token cannot use with 403, and an omitted one when it may use several', async () => {
    const second = await t.owner.post(`/orgs/${t.orgId}/storage-bindings`, {
      body: { name: 'second', backend: 'local' },
    });
    const outside = await presign({ cleanupRule: 'persistent', bindingId: second.body.id });
    expect(outside.status, outside.text).toBe(403);
    expect(outside.body).toEqual({
      statusCode: 403,
      code: 'forbidden',
      message: `This token may not use the storage binding \`${second.body.id}\``,
    });
    // The same answer for a binding that does not exist: nothing about other bindings leaks.
    const unknown = await presign({ cleanupRule: 'persistent', bindingId: '00000000-0000-4000-8000-000000000000' });
    expect([unknown.status, unknown.body.code]).toEqual([403, 'forbidden']);
    const every = await storageClient(t, null, ['write']);
    const omitted = await every.post('/storage/files/presign-upload', { body: { cleanupRule: 'persistent' } });
    expect422(omitted, 'body.bindingId');
    expect(omitted.body.message).toContain('this token may use 2 storage bindings');
    const chosen = await every.post('/storage/files/presign-upload', {
      body: { cleanupRule: 'persistent', bindingId },
    });
    expect(chosen.status).toBe(201);
    const listed = await storageClient(t, [bindingId, second.body.id], ['write']);
    expect422(
      await listed.post('/storage/files/presign-upload', { body: { cleanupRule: 'persistent' } }),
      'body.bindingId',
    );
  });

  it("presigns into an s3 binding's bucket, and answers 503 at complete while the store cannot be reached", async () => {
    const s3 = await t.owner.post(`/orgs/${t.orgId}/storage-bindings`, {
      body: {
        name: 'bucket',
        backend: 's3',
        // Nothing listens on port 9 here: the store is down.
        endpoint: 'http://127.0.0.1:9',
        bucket: 'drover-files',
        region: 'us-east-1',
        accessKeyId: 'AKIAEXAMPLE',
        secretAccessKey: 'secretsecret',
        forcePathStyle: true,
      },
    });
    expect(s3.status).toBe(201);
    const every = await storageClient(t, null, ['write']);
    const res = await every.post('/storage/files/presign-upload', {
      body: { cleanupRule: 'persistent', bindingId: s3.body.id },
    });
    expect(res.status, res.text).toBe(201);
    expect(res.body.uploadUrl).toMatch(/^http:\/\/127\.0\.0\.1:9\/drover-files\/drover\//);
    const complete = await every.post(`/storage/files/${res.body.fileId}/complete`);
    expect(complete.status).toBe(503);
    expect(complete.body).toEqual({
      statusCode: 503,
      code: 'storage_unavailable',
      message:
        'The object store of this storage binding could not be reached or refused; nothing was changed, try again later',
    });
  });

  it('never calls a host of its own networks the operator did not allow, whatever a stored binding says', async () => {
    // A server on the loopback that would answer; bindings to it as stored before the operator's
    // allow-list existed (by address, and by a name that resolves to it).
    const seen: string[] = [];
    const server = http.createServer((req, res) => {
      seen.push(`${req.method} ${req.url}`);
      res.end('internal');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    try {
      const every = await storageClient(t, null, ['write']);
      for (const endpoint of [`http://127.0.0.1:${port}`, `http://localhost:${port}`]) {
        const id = randomUUID();
        await t.coordinator.ctx.repos.storageBindings.insert({
          id,
          orgId: t.orgId,
          name: `stored ${endpoint}`,
          backend: 's3',
          config: {
            endpoint,
            bucket: 'internal',
            region: 'us-east-1',
            accessKeyId: 'AKIAEXAMPLE',
            secretAccessKey: 'secretsecret',
            forcePathStyle: true,
          },
          isDefault: false,
          createdAt: new Date().toISOString(),
        });
        const res = await every.post('/storage/files/presign-upload', {
          body: { cleanupRule: 'persistent', bindingId: id },
        });
        expect(res.status, res.text).toBe(201);
        const complete = await every.post(`/storage/files/${res.body.fileId}/complete`);
        expect(complete.status, endpoint).toBe(503);
      }
      expect(seen).toEqual([]);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('refuses bodies that are not JSON objects', async () => {
    const text = await client.post('/storage/files/presign-upload', {
      rawBody: 'cleanupRule=ttl',
      headers: { 'content-type': 'text/plain' },
    });
    expect(text.status).toBe(422);
    expect(text.body.details).toEqual([{ path: 'body', message: 'is not valid JSON' }]);
    const broken = await client.post('/storage/files/presign-upload', {
      rawBody: '{"cleanupRule": ',
      headers: { 'content-type': 'application/json' },
    });
    expect422(broken);
  });

  it('refuses a body on complete, bad ids and bad list filters', async () => {
    const { fileId } = await uploadFile(client, 'x');
    expect422(await client.post(`/storage/files/${fileId}/complete`, { body: { size: 1 } }));
    // An id that is not even an id names no file: 404, as an unknown one.
    for (const path of ['/storage/files/nope', '/storage/files/nope/download-url']) {
      expect((await client.get(path)).status).toBe(404);
    }
    expect((await client.delete('/storage/files/123')).status).toBe(404);
    expect((await client.post('/storage/files/does-not-exist/complete')).status).toBe(404);
    expect422(await client.get('/storage/files?status=gone'), 'querystring.status');
    expect422(await client.get('/storage/files?bindingId=abc'), 'querystring.bindingId');
    expect422(await client.get('/storage/files?limit=5'), 'querystring.limit');
    for (const cursor of ['yesterday', '17_0', '-1_5', '1.5_2', '99999999999999999_1', `${fileId}`]) {
      expect422(await client.get(`/storage/files?cursor=${cursor}`), 'querystring.cursor');
      expect422(await t.owner.get(`/orgs/${t.orgId}/files?cursor=${cursor}`), 'querystring.cursor');
    }
    expect422(await client.get(`/storage/files/${fileId}?verbose=1`), 'querystring.verbose');
  });

  it('pages both lists past 200 files with the x-next-cursor header, each file once', async () => {
    for (let i = 0; i < 210; i++) await presign({ filename: `page-${i}.txt`, cleanupRule: 'persistent' });
    for (const [get, list] of [
      [client.get.bind(client), '/storage/files'],
      [t.owner.get.bind(t.owner), `/orgs/${t.orgId}/files`],
    ] as const) {
      const seen: string[] = [];
      let query = '?status=pending';
      for (;;) {
        const page = await get(`${list}${query}`);
        expect(page.status, page.text).toBe(200);
        expect(page.body.length).toBeLessThanOrEqual(200);
        seen.push(...page.body.map((f: { id: string }) => f.id));
        const next = page.headers.get('x-next-cursor');
        if (next === null) break;
        query = `?status=pending&cursor=${encodeURIComponent(next)}`;
      }
      expect(seen.length).toBeGreaterThanOrEqual(210);
      expect(new Set(seen).size).toBe(seen.length);
      const all = (await get(`${list}?status=pending`)).body as { createdAt: string }[];
      expect(all).toHaveLength(200);
    }
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import type { ApiClient } from '../helpers/http.js';
import { defaultBindingId, FILE_FIELDS, rawRequest, sha256, storageClient, uploadFile } from '../helpers/storage.js';

/**
 * The whole upload flow as a curl user would drive it (spec: File storage, File status):
 * presign-upload, a raw PUT to the presigned URL, complete, then a download URL and a raw GET.
 */

describe('the upload flow with raw HTTP', () => {
  let t: TestCoordinator;
  let client: ApiClient;
  let bindingId: string;
  beforeAll(async () => {
    t = await startTestCoordinator();
    bindingId = await defaultBindingId(t);
    client = await storageClient(t, null, ['read', 'write', 'delete']);
  });
  afterAll(() => t?.close());

  it('presigns, receives a chunked PUT, completes, and serves the same bytes back', async () => {
    const presign = await client.post('/storage/files/presign-upload', {
      body: { filename: 'report ü.csv', contentType: 'text/csv', cleanupRule: 'ttl', ttlSeconds: 3600 },
    });
    expect(presign.status, presign.text).toBe(201);
    expect(Object.keys(presign.body).sort()).toEqual(['expiresInSeconds', 'fileId', 'headers', 'method', 'uploadUrl']);
    expect(presign.body).toMatchObject({
      method: 'PUT',
      expiresInSeconds: 900,
      headers: { 'content-type': 'text/csv' },
    });
    expect(presign.body.uploadUrl).toMatch(
      new RegExp(
        `^${t.baseUrl}/storage/blobs/${presign.body.fileId}\\?m=PUT&exp=\\d+&n=[A-Za-z0-9_-]{16}&sig=[A-Za-z0-9_-]{43}$`,
      ),
    );

    const pending = await client.get(`/storage/files/${presign.body.fileId}`);
    expect(pending.status).toBe(200);
    expect(Object.keys(pending.body).sort()).toEqual(FILE_FIELDS);
    expect(pending.body).toMatchObject({ status: 'pending', size: 0, bindingId, cleanupRule: 'ttl', deletedAt: null });

    const data = Buffer.from('a,b\n1,2\n'.repeat(1000));
    const put = await rawRequest('PUT', presign.body.uploadUrl, {
      headers: presign.body.headers,
      chunks: [data.subarray(0, 100), data.subarray(100, 5000), data.subarray(5000)],
    });
    expect(put.status, put.body.toString()).toBe(200);
    expect(put.json()).toEqual({ fileId: presign.body.fileId, size: data.length, sha256: sha256(data) });
    expect(put.headers.etag).toBe(`"${sha256(data)}"`);

    const before = Date.now();
    const done = await client.post(`/storage/files/${presign.body.fileId}/complete`);
    expect(done.status, done.text).toBe(200);
    expect(Object.keys(done.body).sort()).toEqual(FILE_FIELDS);
    expect(done.body).toMatchObject({
      id: presign.body.fileId,
      bindingId,
      status: 'active',
      size: data.length,
      filename: 'report ü.csv',
      contentType: 'text/csv',
      cleanupRule: 'ttl',
      deletedAt: null,
    });
    // The TTL counts from completion.
    const expires = Date.parse(done.body.expiresAt);
    expect(expires).toBeGreaterThanOrEqual(before + 3600_000 - 1000);
    expect(expires).toBeLessThanOrEqual(Date.now() + 3600_000 + 1000);

    const url = await client.get(`/storage/files/${presign.body.fileId}/download-url`);
    expect(url.status).toBe(200);
    expect(Object.keys(url.body).sort()).toEqual(['downloadUrl', 'expiresInSeconds']);
    expect(url.body.expiresInSeconds).toBe(900);
    const got = await rawRequest('GET', url.body.downloadUrl);
    expect(got.status).toBe(200);
    expect(got.body.equals(data)).toBe(true);
    expect(got.headers).toMatchObject({
      'content-type': 'text/csv',
      'content-length': String(data.length),
      'accept-ranges': 'bytes',
      etag: `"${sha256(data)}"`,
      'x-content-type-options': 'nosniff',
      'content-security-policy': "default-src 'none'; sandbox",
    });
    expect(got.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    expect(got.headers['content-disposition']).toBe(
      `attachment; filename="report _.csv"; filename*=UTF-8''report%20%C3%BC.csv`,
    );
    // Each call issues a new URL.
    const again = await client.get(`/storage/files/${presign.body.fileId}/download-url`);
    expect(again.status).toBe(200);
  });

  it('refuses complete before the PUT with 409 and leaves the file pending', async () => {
    const presign = await client.post('/storage/files/presign-upload', { body: { cleanupRule: 'persistent' } });
    const res = await client.post(`/storage/files/${presign.body.fileId}/complete`);
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ statusCode: 409, code: 'conflict' });
    expect(res.body.message).toContain('PUT it to its uploadUrl first');
    expect((await client.get(`/storage/files/${presign.body.fileId}`)).body.status).toBe('pending');
    const url = await client.get(`/storage/files/${presign.body.fileId}/download-url`);
    expect(url.status).toBe(409);
    expect(url.body.message).toContain('only an active file can be downloaded');
  });

  it('takes a second PUT before complete as a replacement, answers complete twice the same, and refuses a PUT after it', async () => {
    const presign = await client.post('/storage/files/presign-upload', { body: { cleanupRule: 'persistent' } });
    const { uploadUrl, fileId } = presign.body;
    expect((await rawRequest('PUT', uploadUrl, { chunks: ['first version'] })).status).toBe(200);
    expect((await rawRequest('PUT', uploadUrl, { chunks: ['second'] })).status).toBe(200);
    const first = await client.post(`/storage/files/${fileId}/complete`);
    const second = await client.post(`/storage/files/${fileId}/complete`, { body: {} });
    expect(first.status).toBe(200);
    expect(second.status).toBe(200);
    expect(second.body).toEqual(first.body);
    expect(first.body.size).toBe('second'.length);
    const late = await rawRequest('PUT', uploadUrl, { chunks: ['third'] });
    expect(late.status).toBe(409);
    expect(late.json()).toMatchObject({ code: 'conflict', message: expect.stringContaining('already complete') });
    const url = (await client.get(`/storage/files/${fileId}/download-url`)).body.downloadUrl;
    expect((await rawRequest('GET', url)).body.toString()).toBe('second');
  });

  it('names a file without filename by its id and types it application/octet-stream; accepts an empty file', async () => {
    const presign = await client.post('/storage/files/presign-upload', { body: { cleanupRule: 'persistent' } });
    // No content type at all, and an empty body.
    const put = await rawRequest('PUT', presign.body.uploadUrl, { headers: { 'content-length': '0' } });
    expect(put.status, put.body.toString()).toBe(200);
    expect(put.json()).toEqual({ fileId: presign.body.fileId, size: 0, sha256: sha256('') });
    const done = await client.post(`/storage/files/${presign.body.fileId}/complete`);
    expect(done.body).toMatchObject({
      filename: presign.body.fileId,
      contentType: 'application/octet-stream',
      size: 0,
      cleanupRule: 'persistent',
      expiresAt: null,
    });
    const url = (await client.get(`/storage/files/${presign.body.fileId}/download-url`)).body.downloadUrl;
    const got = await rawRequest('GET', url);
    expect(got.status).toBe(200);
    expect(got.body.length).toBe(0);
  });

  it('stores a JSON body as bytes, never parsing it', async () => {
    const json = '{"not": "parsed", "big": [1,2,3]}';
    const { fileId, file } = await uploadFile(client, json, {
      cleanupRule: 'persistent',
      contentType: 'application/json',
    });
    expect(file.size).toBe(json.length);
    const url = (await client.get(`/storage/files/${fileId}/download-url`)).body.downloadUrl;
    const got = await rawRequest('GET', url);
    expect(got.body.toString()).toBe(json);
    expect(got.headers['content-type']).toBe('application/json');
  });

  it('uses the default TTL of one day when ttlSeconds is left out', async () => {
    const { file } = await uploadFile(client, 'x', { cleanupRule: 'ttl' });
    const lifetime = Date.parse(file.expiresAt) - Date.now();
    expect(lifetime).toBeGreaterThan(86400_000 - 60_000);
    expect(lifetime).toBeLessThanOrEqual(86400_000);
  });
});

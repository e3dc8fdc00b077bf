import { createHmac } from 'node:crypto';
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import type { ApiClient } from '../helpers/http.js';
import { rawRequest, sha256, storageClient, uploadFile, type RawResponse } from '../helpers/storage.js';

/**
 * The local backend's presigned URLs (CONTRACT §6, docs/storage.md): HMAC-signed, bound to one
 * file, one method and an expiry. Anything altered, expired or used with the other method is 403
 * with the error body; downloads honour `Range`.
 */

const UNKNOWN_ID = '00000000-0000-4000-8000-000000000000';

function expectRefused(res: RawResponse, status: number, message?: string | RegExp): void {
  expect(res.status, res.body.toString()).toBe(status);
  const body = res.json();
  expect(body).toMatchObject({ statusCode: status, code: expect.any(String), message: expect.any(String) });
  if (message) expect(body.message).toMatch(message);
}

/** The URL with one query parameter replaced. */
function withParam(url: string, name: string, value: string | null): string {
  const u = new URL(url);
  if (value === null) u.searchParams.delete(name);
  else u.searchParams.set(name, value);
  return u.toString();
}

describe('presigned blob URLs', () => {
  let t: TestCoordinator;
  let client: ApiClient;
  let offsetMs = 0;
  const content = Buffer.from('0123456789abcdefghijklmnopqrstuvwxyz');
  let fileId: string;
  let downloadUrl: string;
  beforeAll(async () => {
    t = await startTestCoordinator({ clock: { now: () => Date.now() + offsetMs } });
    client = await storageClient(t, null, ['read', 'write', 'delete']);
    fileId = (await uploadFile(client, content, { cleanupRule: 'persistent', filename: 'abc.txt' })).fileId;
    downloadUrl = (await client.get(`/storage/files/${fileId}/download-url`)).body.downloadUrl;
  });
  afterAll(() => t?.close());

  it('refuses a tampered signature, expiry, file id or method parameter with 403', async () => {
    const presign = await client.post('/storage/files/presign-upload', { body: { cleanupRule: 'persistent' } });
    const url: string = presign.body.uploadUrl;
    const sig = new URL(url).searchParams.get('sig')!;
    const flipped = `${sig[0] === 'A' ? 'B' : 'A'}${sig.slice(1)}`;
    const exp = Number(new URL(url).searchParams.get('exp'));
    const tampered = [
      withParam(url, 'sig', flipped),
      withParam(url, 'exp', String(exp + 3600)),
      withParam(url, 'm', 'GET'),
      url.replace(presign.body.fileId, fileId),
    ];
    for (const bad of tampered) {
      expectRefused(await rawRequest('PUT', bad, { chunks: ['x'] }), 403, /signature is not valid/);
    }
    for (const bad of [withParam(url, 'sig', null), withParam(url, 'exp', 'soon'), withParam(url, 'm', null)]) {
      expectRefused(await rawRequest('PUT', bad, { chunks: ['x'] }), 403, /not a valid presigned URL/);
    }
    expectRefused(await rawRequest('GET', withParam(downloadUrl, 'sig', flipped)), 403);
    // Nothing was stored by the refused calls.
    expect((await client.post(`/storage/files/${presign.body.fileId}/complete`)).status).toBe(409);
  });

  it('issues a new download URL on every call, each of which works (spec: download-url)', async () => {
    const urls = await Promise.all(
      Array.from(
        { length: 3 },
        async () => (await client.get(`/storage/files/${fileId}/download-url`)).body.downloadUrl,
      ),
    );
    expect(new Set(urls).size).toBe(3);
    for (const url of urls) expect((await rawRequest('GET', url)).body.equals(content)).toBe(true);
  });

  it('refuses a URL whose nonce was removed, changed, or a parameter sent twice, with 403', async () => {
    const n = new URL(downloadUrl).searchParams.get('n')!;
    expectRefused(await rawRequest('GET', withParam(downloadUrl, 'n', null)), 403, /signature is not valid/);
    expectRefused(
      await rawRequest('GET', withParam(downloadUrl, 'n', `${n[0] === 'A' ? 'B' : 'A'}${n.slice(1)}`)),
      403,
      /signature is not valid/,
    );
    const sig = new URL(downloadUrl).searchParams.get('sig')!;
    expectRefused(await rawRequest('GET', `${downloadUrl}&sig=${sig}`), 403, /not a valid presigned URL/);
  });

  it('refuses an upload URL used to download and a download URL used to upload', async () => {
    const presign = await client.post('/storage/files/presign-upload', { body: { cleanupRule: 'persistent' } });
    expectRefused(await rawRequest('GET', presign.body.uploadUrl), 403, 'This URL is signed for PUT, not GET');
    expectRefused(
      await rawRequest('PUT', downloadUrl, { chunks: ['overwrite'] }),
      403,
      'This URL is signed for GET, not PUT',
    );
    const got = await rawRequest('GET', downloadUrl);
    expect(got.body.equals(content)).toBe(true);
  });

  it('refuses expired upload and download URLs', async () => {
    const presign = await client.post('/storage/files/presign-upload', { body: { cleanupRule: 'persistent' } });
    const fresh = (await client.get(`/storage/files/${fileId}/download-url`)).body.downloadUrl;
    offsetMs += 901_000;
    try {
      expectRefused(await rawRequest('PUT', presign.body.uploadUrl, { chunks: ['late'] }), 403, /expired/);
      expectRefused(await rawRequest('GET', fresh), 403, /expired/);
    } finally {
      offsetMs -= 901_000;
    }
    expect((await rawRequest('GET', fresh)).status).toBe(200);
  });

  it('answers 404 for a correctly signed URL naming no file, and for a malformed id', async () => {
    // The URL signing key never leaves the server: read from the database to sign a URL here.
    const row = await t.sql.get<{ value: string }>(
      "SELECT value FROM server_secrets WHERE name = 'blob_url_signing_key'",
    );
    const exp = Math.floor(Date.now() / 1000) + 60;
    const sig = createHmac('sha256', Buffer.from(row!.value, 'base64'))
      .update(`DROVER-BLOB-V1\nGET\n${UNKNOWN_ID}\n${exp}`)
      .digest('base64url');
    const res = await rawRequest('GET', `${t.baseUrl}/storage/blobs/${UNKNOWN_ID}?m=GET&exp=${exp}&sig=${sig}`);
    expectRefused(res, 404, 'File not found');
    const bad = await rawRequest('GET', `${t.baseUrl}/storage/blobs/not-a-uuid?m=GET&exp=${exp}&sig=${sig}`);
    expectRefused(bad, 404);
  });

  it('serves byte ranges: first bytes, an open end, a suffix, and a range past the end clamped', async () => {
    const cases: [string, number, number][] = [
      ['bytes=0-9', 0, 9],
      ['bytes=30-', 30, content.length - 1],
      ['bytes=-5', content.length - 5, content.length - 1],
      ['bytes=20-99999', 20, content.length - 1],
      ['bytes=-99999', 0, content.length - 1],
    ];
    for (const [range, start, end] of cases) {
      const res = await rawRequest('GET', downloadUrl, { headers: { range } });
      expect(res.status, range).toBe(206);
      expect(res.body.toString(), range).toBe(content.subarray(start, end + 1).toString());
      expect(res.headers['content-range']).toBe(`bytes ${start}-${end}/${content.length}`);
      expect(res.headers['content-length']).toBe(String(end - start + 1));
      expect(res.headers['accept-ranges']).toBe('bytes');
    }
  });

  it('answers 416 with the size for a range outside the file, and ignores ranges it does not serve', async () => {
    const outside = await rawRequest('GET', downloadUrl, { headers: { range: `bytes=${content.length}-` } });
    expectRefused(outside, 416);
    expect(outside.headers['content-range']).toBe(`bytes */${content.length}`);
    expect(outside.json().code).toBe('range_not_satisfiable');
    for (const range of ['bytes=0-1,4-5', 'items=0-3', 'bytes=5-2', 'garbage']) {
      const res = await rawRequest('GET', downloadUrl, { headers: { range } });
      expect(res.status, range).toBe(200);
      expect(res.body.equals(content)).toBe(true);
    }
  });

  it('applies a range only while If-Range names the current content', async () => {
    const etag = `"${sha256(content)}"`;
    const same = await rawRequest('GET', downloadUrl, { headers: { range: 'bytes=0-0', 'if-range': etag } });
    expect(same.status).toBe(206);
    const changed = await rawRequest('GET', downloadUrl, { headers: { range: 'bytes=0-0', 'if-range': '"other"' } });
    expect(changed.status).toBe(200);
    expect(changed.body.length).toBe(content.length);
  });

  it('survives a client that hangs up in the middle of a large download, and keeps serving', async () => {
    const big = Buffer.alloc(8 << 20, 5);
    const { fileId: bigId } = await uploadFile(client, big, { cleanupRule: 'persistent' });
    const url = (await client.get(`/storage/files/${bigId}/download-url`)).body.downloadUrl;
    await new Promise<void>((resolve) => {
      http.get(url, (res) => {
        res.once('data', () => {
          res.destroy();
          resolve();
        });
      });
    });
    const whole = await rawRequest('GET', url);
    expect(whole.status).toBe(200);
    expect(whole.body.equals(big)).toBe(true);
    const tail = await rawRequest('GET', url, { headers: { range: `bytes=${big.length - 3}-` } });
    expect(tail.status).toBe(206);
    expect(tail.body.length).toBe(3);
  });

  it('stops serving a file once it is deleted', async () => {
    const { fileId: doomed } = await uploadFile(client, 'soon gone', { cleanupRule: 'persistent' });
    const url = (await client.get(`/storage/files/${doomed}/download-url`)).body.downloadUrl;
    expect((await client.delete(`/storage/files/${doomed}`)).status).toBe(200);
    expectRefused(await rawRequest('GET', url), 404, /deleted/);
  });
});

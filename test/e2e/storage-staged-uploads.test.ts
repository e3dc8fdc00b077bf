import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import type { ApiClient } from '../helpers/http.js';
import { eventually } from '../helpers/poll.js';
import { TestS3 } from '../helpers/s3.js';
import { rawRequest, sha256, storageClient, type PresignedUpload } from '../helpers/storage.js';

/**
 * Uploads are staged (docs/storage.md, "Uploads are staged"): a PUT never writes a file's blob,
 * `complete` promotes the newest finished upload, so a PUT that finishes after `complete` or a
 * deletion cannot replace or destroy a completed file, and concurrent PUTs cannot leave a file
 * whose recorded hash is another upload's. On a bucket, `complete` reads an upload back no further
 * than its size.
 */

const presign = async (client: ApiClient) => {
  const res = await client.post<PresignedUpload>('/storage/files/presign-upload', {
    body: { cleanupRule: 'persistent', contentType: 'application/octet-stream' },
  });
  expect(res.status, res.text).toBe(201);
  return res.body;
};

const download = async (client: ApiClient, fileId: string) => {
  const url = await client.get<{ downloadUrl: string }>(`/storage/files/${fileId}/download-url`);
  expect(url.status, url.text).toBe(200);
  const res = await fetch(url.body.downloadUrl);
  return { status: res.status, etag: res.headers.get('etag'), body: Buffer.from(await res.arrayBuffer()) };
};

/** A PUT that sends `first`, then waits for `finish()` to send `rest`. */
function slowPut(url: string, headers: Record<string, string>, first: Buffer, rest: Buffer) {
  const req = http.request(url, {
    method: 'PUT',
    headers: { ...headers, 'content-length': String(first.length + rest.length) },
  });
  const answer = new Promise<{ status: number; body: string }>((resolve, reject) => {
    req.on('response', (res) => {
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(parts).toString() }));
    });
    req.on('error', reject);
  });
  req.write(first);
  return { answer, finish: () => req.end(rest) };
}

describe('staged uploads on the data directory', () => {
  let t: TestCoordinator;
  let client: ApiClient;
  beforeAll(async () => {
    t = await startTestCoordinator();
    client = await storageClient(t, null, ['read', 'write', 'delete']);
  });
  afterAll(() => t?.close());
  const staged = () => {
    const dir = path.join(t.dataDir, 'blobs', 'uploads');
    return fs.existsSync(dir)
      ? (fs.readdirSync(dir, { recursive: true }) as string[]).filter((n) => n.includes('.'))
      : [];
  };

  it('keeps a completed file whole when a PUT started before complete finishes after it (409, discarded)', async () => {
    const up = await presign(client);
    const late = slowPut(up.uploadUrl, up.headers, Buffer.from('BBBBB'), Buffer.from('BBBBB'));
    // The slow PUT is being received before the other starts.
    await eventually(() => fs.readdirSync(path.join(t.dataDir, 'blobs', 'tmp')).some((n) => n.startsWith(up.fileId)));
    const a = Buffer.from('AAAAAAAAAA');
    const put = await rawRequest('PUT', up.uploadUrl, { headers: up.headers, chunks: [a] });
    expect(put.status, put.body.toString()).toBe(200);
    const done = await client.post(`/storage/files/${up.fileId}/complete`);
    expect(done.status, done.text).toBe(200);
    expect(done.body).toMatchObject({ status: 'active', size: 10 });

    late.finish();
    const answer = await late.answer;
    expect(answer.status).toBe(409);
    expect(answer.body).toContain('The file is active; the upload was discarded');

    const got = await download(client, up.fileId);
    expect(got.status).toBe(200);
    expect(got.body.equals(a)).toBe(true);
    expect(got.etag).toBe(`"${sha256(a)}"`);
    expect(staged()).toEqual([]);
  });

  it('records the hash of the bytes it serves whatever concurrent PUTs do', async () => {
    for (let trial = 0; trial < 25; trial++) {
      const up = await presign(client);
      const bodies = ['A', 'B', 'C'].map((c) => Buffer.alloc(4096, c));
      const puts = await Promise.all(
        bodies.map((b) =>
          rawRequest('PUT', up.uploadUrl, { headers: up.headers, chunks: [b.subarray(0, 1000), b.subarray(1000)] }),
        ),
      );
      for (const p of puts) expect(p.status).toBe(200);
      const done = await client.post(`/storage/files/${up.fileId}/complete`);
      expect(done.status, done.text).toBe(200);
      const got = await download(client, up.fileId);
      expect(got.etag).toBe(`"${sha256(got.body)}"`);
      expect(bodies.some((b) => b.equals(got.body))).toBe(true);
    }
    expect(staged()).toEqual([]);
  });

  it('removes the staged upload of a file deleted before complete', async () => {
    const up = await presign(client);
    const put = await rawRequest('PUT', up.uploadUrl, { headers: up.headers, chunks: ['hello'] });
    expect(put.status).toBe(200);
    expect(staged()).toHaveLength(1);
    expect((await client.delete(`/storage/files/${up.fileId}`)).body.status).toBe('deleted');
    expect(staged()).toEqual([]);
    const again = await rawRequest('PUT', up.uploadUrl, { headers: up.headers, chunks: ['hello'] });
    expect(again.status).toBe(409);
    expect(staged()).toEqual([]);
  });
});

describe('staged uploads in a bucket', () => {
  const s3 = new TestS3(['drover-files']);
  let t: TestCoordinator;
  let client: ApiClient;
  /** A proxy in front of the store; `endless` makes it answer every GET of an upload with endless bytes. */
  let proxy: http.Server;
  let endless = false;
  let endlessSent = 0;
  beforeAll(async () => {
    await s3.start();
    proxy = http.createServer((req, res) => {
      if (endless && req.method === 'GET' && req.url?.includes('/uploads/')) {
        res.writeHead(200, { 'content-type': 'application/octet-stream' });
        const chunk = Buffer.alloc(1 << 16, 'x');
        const pump = () => {
          while (!res.destroyed && res.write(chunk)) endlessSent += chunk.length;
          if (!res.destroyed) res.once('drain', pump);
        };
        pump();
        return;
      }
      const upstream = http.request(
        { host: '127.0.0.1', port: s3.port, method: req.method, path: req.url, headers: req.headers },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      upstream.on('error', () => res.destroy());
      req.pipe(upstream);
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    const port = (proxy.address() as AddressInfo).port;
    const env = s3.storageEnv('drover-files', 'coordinator');
    env.DROVER_STORAGE_URL = env.DROVER_STORAGE_URL!.replace(
      encodeURIComponent(s3.endpoint),
      encodeURIComponent(`http://127.0.0.1:${port}`),
    );
    t = await startTestCoordinator({
      env: { ...env, DROVER_MAX_FILE_BYTES: '1000', DROVER_PRESIGN_TTL_SECONDS: '6' },
    });
    client = await storageClient(t, null, ['read', 'write', 'delete']);
  }, 60_000);
  afterAll(async () => {
    await t?.close();
    proxy?.closeAllConnections();
    await new Promise((resolve) => proxy?.close(resolve));
    await s3.close();
  });
  const keysOf = (fileId: string) => s3.objectKeys('drover-files').filter((k) => k.includes(fileId));
  const put = (up: PresignedUpload, body: Buffer) => fetch(up.uploadUrl, { method: 'PUT', headers: up.headers, body });

  it('uploads to a staging object, and complete promotes it into the file object', async () => {
    const up = await presign(client);
    expect(new URL(up.uploadUrl).pathname).toMatch(
      new RegExp(`^/drover-files/coordinator/uploads/${up.fileId}/[0-9a-f]{24}$`),
    );
    expect((await put(up, Buffer.from('hello'))).status).toBe(200);
    expect(keysOf(up.fileId)).toEqual([expect.stringMatching(new RegExp(`^coordinator/uploads/${up.fileId}/`))]);
    const done = await client.post(`/storage/files/${up.fileId}/complete`);
    expect(done.status, done.text).toBe(200);
    expect(done.body).toMatchObject({ status: 'active', size: 5 });
    expect(keysOf(up.fileId)).toEqual([`coordinator/${up.fileId.slice(0, 2)}/${up.fileId}`]);
    const got = await download(client, up.fileId);
    expect(got.body.toString()).toBe('hello');
  });

  it('a PUT after complete never replaces the file, and a PUT after DELETE leaves no object for long', async () => {
    const up = await presign(client);
    expect((await put(up, Buffer.from('small'))).status).toBe(200);
    expect((await client.post(`/storage/files/${up.fileId}/complete`)).status).toBe(200);
    // The URL still works with the store until it expires, but only writes its staging object.
    expect((await put(up, Buffer.alloc(50_000, 'z'))).status).toBe(200);
    const got = await download(client, up.fileId);
    expect(got.body.toString()).toBe('small');
    expect((await client.get(`/storage/files/${up.fileId}`)).body).toMatchObject({ status: 'active', size: 5 });

    const other = await presign(client);
    expect((await put(other, Buffer.from('first'))).status).toBe(200);
    expect((await client.delete(`/storage/files/${other.fileId}`)).body.status).toBe('deleted');
    expect(keysOf(other.fileId)).toEqual([]);
    expect((await put(other, Buffer.from('after the delete'))).status).toBe(200);
    expect(keysOf(other.fileId)).toHaveLength(1);

    // Once the upload URLs expired (and a PUT started then had time to land), the staging objects go.
    await eventually(() => keysOf(other.fileId).length === 0 && keysOf(up.fileId).length === 1, 30_000);
    expect(keysOf(up.fileId)).toEqual([`coordinator/${up.fileId.slice(0, 2)}/${up.fileId}`]);
  }, 45_000);

  it('refuses an upload over the limit by its size before reading it (413), and drops it', async () => {
    const up = await presign(client);
    expect((await put(up, Buffer.alloc(5000, 'y'))).status).toBe(200);
    const done = await client.post(`/storage/files/${up.fileId}/complete`);
    expect(done.status, done.text).toBe(413);
    expect(done.text).toContain('5000 bytes');
    expect(keysOf(up.fileId)).toEqual([]);
  });

  it('reads no further than the size of the upload from a store that sends endless bytes', async () => {
    const up = await presign(client);
    expect((await put(up, Buffer.from('0123456789'))).status).toBe(200);
    endless = true;
    const started = Date.now();
    try {
      const done = await client.post(`/storage/files/${up.fileId}/complete`);
      expect(done.status, done.text).toBe(503);
    } finally {
      endless = false;
    }
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(endlessSent).toBeLessThan(16 * 1024 * 1024);
    expect((await client.get(`/storage/files/${up.fileId}`)).body.status).toBe('pending');
    // The store behaves again: complete works.
    const done = await client.post(`/storage/files/${up.fileId}/complete`);
    expect(done.status, done.text).toBe(200);
    expect(done.body).toMatchObject({ status: 'active', size: 10 });
  });
});

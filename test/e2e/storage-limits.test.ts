import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import type { ApiClient } from '../helpers/http.js';
import { eventually } from '../helpers/poll.js';
import { defaultBindingId, rawRequest, storageClient, uploadFile } from '../helpers/storage.js';

/**
 * DROVER_MAX_FILE_BYTES (CONTRACT §6): an upload over it is refused and leaves nothing behind,
 * whether its Content-Length says so at once (before the body is sent, to a client that expects
 * `100 Continue`) or a chunked body grows past it; an upload cut off by the client leaves nothing
 * either. And `GET /storage/files` lists at most 200 entries.
 */

const LIMIT = 1024;

/** Every file under the blob directory (temp files included). */
function blobFiles(dataDir: string): string[] {
  const root = path.join(dataDir, 'blobs');
  if (!fs.existsSync(root)) return [];
  return (fs.readdirSync(root, { recursive: true }) as string[]).filter((p) =>
    fs.statSync(path.join(root, p)).isFile(),
  );
}

describe('upload size limit', () => {
  let t: TestCoordinator;
  let client: ApiClient;
  beforeAll(async () => {
    t = await startTestCoordinator({ env: { DROVER_MAX_FILE_BYTES: String(LIMIT) } });
    client = await storageClient(t, [await defaultBindingId(t)], ['read', 'write', 'delete']);
  });
  afterAll(() => t?.close());

  const pendingUpload = async () =>
    (await client.post('/storage/files/presign-upload', { body: { cleanupRule: 'persistent' } })).body as {
      fileId: string;
      uploadUrl: string;
    };

  it('refuses a Content-Length over the limit at once with 413, keeping nothing', async () => {
    const before = blobFiles(t.dataDir);
    const { fileId, uploadUrl } = await pendingUpload();
    const res = await rawRequest('PUT', uploadUrl, {
      headers: { 'content-length': String(LIMIT + 1) },
      chunks: [Buffer.alloc(LIMIT + 1, 1)],
    });
    expect(res.status).toBe(413);
    expect(res.json()).toMatchObject({ statusCode: 413, code: 'payload_too_large' });
    expect(res.json().message).toContain(`${LIMIT} bytes`);
    expect(blobFiles(t.dataDir)).toEqual(before);
    expect((await client.post(`/storage/files/${fileId}/complete`)).status).toBe(409);
  });

  it('cuts a chunked body when it passes the limit with 413, keeping nothing, and accepts a retry within it', async () => {
    const before = blobFiles(t.dataDir);
    const { fileId, uploadUrl } = await pendingUpload();
    const chunk = Buffer.alloc(400, 2);
    const res = await rawRequest('PUT', uploadUrl, { chunks: [chunk, chunk, chunk, chunk, chunk] });
    expect(res.status).toBe(413);
    expect(res.json().code).toBe('payload_too_large');
    expect(blobFiles(t.dataDir)).toEqual(before);
    expect((await client.post(`/storage/files/${fileId}/complete`)).status).toBe(409);

    const exact = await rawRequest('PUT', uploadUrl, { chunks: [Buffer.alloc(LIMIT, 3)] });
    expect(exact.status).toBe(200);
    const done = await client.post(`/storage/files/${fileId}/complete`);
    expect(done.body).toMatchObject({ status: 'active', size: LIMIT });
  });

  it('tells a client that expects 100-continue of a refusal before it sends a byte, and to go on otherwise', async () => {
    const expecting = (uploadUrl: string, size: number) =>
      new Promise<{ status: number; continued: boolean; body: string }>((resolve, reject) => {
        const req = http.request(uploadUrl, {
          method: 'PUT',
          headers: { 'content-length': String(size), expect: '100-continue' },
        });
        let continued = false;
        req.on('continue', () => {
          continued = true;
          req.end(Buffer.alloc(size, 5));
        });
        req.on('response', (res) => {
          let body = '';
          res.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, continued, body }));
        });
        req.on('error', reject);
        req.flushHeaders();
      });
    const over = await pendingUpload();
    const refused = await expecting(over.uploadUrl, LIMIT + 1);
    expect(refused).toMatchObject({ status: 413, continued: false });
    expect(JSON.parse(refused.body).message).toBe(`The file is larger than the limit of ${LIMIT} bytes`);
    const forged = await expecting(over.uploadUrl.replace(/sig=[^&]+/, 'sig=forged'), 10);
    expect(forged).toMatchObject({ status: 403, continued: false });

    const within = await pendingUpload();
    expect(await expecting(within.uploadUrl, LIMIT)).toMatchObject({ status: 200, continued: true });
    expect((await client.post(`/storage/files/${within.fileId}/complete`)).body).toMatchObject({ size: LIMIT });
  });

  it('keeps nothing of an upload the client abandons halfway', async () => {
    const before = blobFiles(t.dataDir);
    const { fileId, uploadUrl } = await pendingUpload();
    const req = http.request(uploadUrl, { method: 'PUT', headers: { 'content-length': String(LIMIT) } });
    const closed = new Promise<void>((resolve) => {
      req.on('error', () => resolve());
      req.on('close', () => resolve());
    });
    req.write(Buffer.alloc(300, 4));
    // While the body was arriving, it went to a temp file.
    const parts = () => blobFiles(t.dataDir).filter((f) => f.startsWith('tmp/') && f.endsWith('.part'));
    expect(await eventually(() => parts().length > 0 && parts(), 5_000, 'the temp file')).toHaveLength(1);
    req.destroy();
    await closed;
    // The server notices the reset and removes its temp file.
    await eventually(() => blobFiles(t.dataDir).length === before.length, 5_000, 'the temp file to go');
    expect(blobFiles(t.dataDir)).toEqual(before);
    expect((await client.get(`/storage/files/${fileId}`)).body.status).toBe('pending');
    expect((await client.post(`/storage/files/${fileId}/complete`)).status).toBe(409);
  });
});

describe('an upload cut off with 413 while its client is still sending', () => {
  let t: TestCoordinator;
  let client: ApiClient;
  beforeAll(async () => {
    // A short request timeout: the body-deadline sweep (http/slow-clients.ts) runs every 100 ms.
    t = await startTestCoordinator({
      env: { DROVER_MAX_FILE_BYTES: String(LIMIT), DROVER_REQUEST_TIMEOUT_MS: '400' },
    });
    client = await storageClient(t, [await defaultBindingId(t)], ['read', 'write', 'delete']);
  });
  afterAll(() => t?.close());

  it('keeps serving after the refused request is swept (a chunked body piped from a command, far over the limit)', async () => {
    const { uploadUrl } = (await client.post('/storage/files/presign-upload', { body: { cleanupRule: 'persistent' } }))
      .body as { uploadUrl: string };
    // `tar cz . | curl -T - <url>`: a chunked body that goes on being sent after the refusal.
    const refused = await new Promise<number>((resolve, reject) => {
      const req = http.request(uploadUrl, { method: 'PUT', headers: { 'transfer-encoding': 'chunked' } });
      const chunk = Buffer.alloc(64 * 1024, 7);
      let answered = false;
      const pump = () => {
        while (!answered && !req.destroyed && req.write(chunk));
        if (!answered && !req.destroyed) req.once('drain', pump);
      };
      req.on('response', (res) => {
        answered = true;
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      });
      req.on('error', (error) => (answered ? undefined : reject(error)));
      pump();
    });
    expect(refused).toBe(413);
    // Several sweeps later (each 100 ms) the coordinator still answers: the sweep once met the
    // refused request without its socket and threw, which ended the coordinator's process.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect((await fetch(`${t.url}/healthz`)).status).toBe(200);
    expect((await client.get('/storage/files')).status).toBe(200);
  });
});

describe('file list', () => {
  let t: TestCoordinator;
  let client: ApiClient;
  let bindingA: string;
  let bindingB: string;
  beforeAll(async () => {
    t = await startTestCoordinator();
    bindingA = await defaultBindingId(t);
    bindingB = (await t.owner.post(`/orgs/${t.orgId}/storage-bindings`, { body: { name: 'b', backend: 'local' } })).body
      .id;
    client = await storageClient(t, null, ['read', 'write', 'delete']);
  });
  afterAll(() => t?.close());

  it('answers at most 200 files, newest first, and filters by binding and status', async () => {
    const created: string[] = [];
    for (let i = 0; i < 205; i++) {
      const res = await client.post('/storage/files/presign-upload', {
        body: { cleanupRule: 'persistent', bindingId: bindingA, filename: `f${i}` },
      });
      expect(res.status).toBe(201);
      created.push(res.body.fileId);
    }
    const inB = await uploadFile(client, 'b', { cleanupRule: 'persistent', bindingId: bindingB });
    const deleted = await uploadFile(client, 'd', { cleanupRule: 'persistent', bindingId: bindingB });
    expect((await client.delete(`/storage/files/${deleted.fileId}`)).status).toBe(200);

    const all = await client.get('/storage/files');
    expect(all.status).toBe(200);
    expect(all.body).toHaveLength(200);
    expect(all.body[0].id).toBe(deleted.fileId);
    expect(all.body[1].id).toBe(inB.fileId);
    expect(all.body.slice(2).map((f: { id: string }) => f.id)).toEqual(created.slice(-198).reverse());

    const pendingA = await client.get(`/storage/files?bindingId=${bindingA}&status=pending`);
    expect(pendingA.body).toHaveLength(200);
    expect(pendingA.body.map((f: { id: string }) => f.id)).toEqual(created.slice(-200).reverse());

    const onlyB = await client.get(`/storage/files?bindingId=${bindingB}`);
    expect(onlyB.body.map((f: { id: string }) => f.id)).toEqual([deleted.fileId, inB.fileId]);
    const activeB = await client.get(`/storage/files?bindingId=${bindingB}&status=active`);
    expect(activeB.body.map((f: { id: string }) => f.id)).toEqual([inB.fileId]);
    const deletedAny = await client.get('/storage/files?status=deleted');
    expect(deletedAny.body).toEqual([
      expect.objectContaining({ id: deleted.fileId, status: 'deleted', deletedAt: expect.any(String) }),
    ]);
    expect((await client.get('/storage/files?status=delete_failed')).body).toEqual([]);
  });
});

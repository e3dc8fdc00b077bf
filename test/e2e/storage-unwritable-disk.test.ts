import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTempDir, startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import type { ApiClient } from '../helpers/http.js';
import { defaultBindingId, rawRequest, sha256, storageClient } from '../helpers/storage.js';

/**
 * The data directory's blobs on a file system of their own (a small tmpfs) that becomes
 * read-only, then full: uploads and `complete` answer 503 `storage_unavailable` (docs/storage.md),
 * never a 500, the file stays pending, nothing is left behind, and both work once the operator
 * fixed the disk. Needs root on Linux (to mount); skipped elsewhere.
 */

function canMount(): boolean {
  if (process.platform !== 'linux' || process.getuid?.() !== 0) return false;
  const probe = makeTempDir('drover-mount-probe-');
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', probe], { stdio: 'ignore' });
    execFileSync('umount', [probe], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  } finally {
    fs.rmSync(probe, { recursive: true, force: true });
  }
}

/** Every file under the blob directory (temp files and sidecars included). */
function blobFiles(root: string): string[] {
  return (fs.readdirSync(root, { recursive: true }) as string[])
    .filter((p) => fs.statSync(path.join(root, p)).isFile())
    .sort();
}

describe.runIf(canMount())('blobs on a disk that becomes read-only or full', () => {
  let t: TestCoordinator;
  let client: ApiClient;
  let dataDir: string;
  let blobs: string;
  let mounted = false;
  const remount = (mode: 'ro' | 'rw') => execFileSync('mount', ['-o', `remount,${mode}`, blobs]);

  beforeAll(async () => {
    dataDir = makeTempDir();
    blobs = path.join(dataDir, 'blobs');
    fs.mkdirSync(blobs);
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', blobs]);
    mounted = true;
    t = await startTestCoordinator({ dataDir });
    client = await storageClient(t, [await defaultBindingId(t)], ['read', 'write', 'delete']);
  });
  afterAll(async () => {
    await t?.close();
    if (mounted) execFileSync('umount', [blobs]);
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  const presign = async () =>
    (await client.post('/storage/files/presign-upload', { body: { cleanupRule: 'persistent' } })).body as {
      fileId: string;
      uploadUrl: string;
    };

  it('answers an upload and a complete on a read-only file system with 503, and both work once it is writable', async () => {
    const staged = await presign();
    expect((await rawRequest('PUT', staged.uploadUrl, { chunks: [Buffer.from('staged first')] })).status).toBe(200);
    const fresh = await presign();
    const before = blobFiles(blobs);
    remount('ro');
    try {
      const put = await rawRequest('PUT', fresh.uploadUrl, { chunks: [Buffer.from('hello')] });
      expect(put.status).toBe(503);
      expect(put.headers['retry-after']).toBe('60');
      expect(put.json()).toEqual({
        statusCode: 503,
        code: 'storage_unavailable',
        message:
          "The coordinator's data directory is on a read-only file system (EROFS): the upload was not kept; try again once its operator has made the data directory writable",
      });
      const done = await client.post(`/storage/files/${staged.fileId}/complete`);
      expect(done.status).toBe(503);
      expect(done.headers.get('retry-after')).toBe('60');
      expect(done.body).toMatchObject({ code: 'storage_unavailable' });
      expect((done.body as { message: string }).message).toContain('(EROFS): the file stays pending');
    } finally {
      remount('rw');
    }
    expect(blobFiles(blobs)).toEqual(before);
    expect((await client.get(`/storage/files/${staged.fileId}`)).body).toMatchObject({ status: 'pending' });

    expect((await client.post(`/storage/files/${staged.fileId}/complete`)).body).toMatchObject({
      status: 'active',
      size: 12,
    });
    expect((await rawRequest('PUT', fresh.uploadUrl, { chunks: [Buffer.from('hello')] })).status).toBe(200);
    expect((await client.post(`/storage/files/${fresh.fileId}/complete`)).body).toMatchObject({
      status: 'active',
      size: 5,
    });
  });

  it('answers a complete that finds the disk full with 503, leaves no partial sidecar, and completes the same bytes later', async () => {
    const data = Buffer.from('the bytes of a file completed on a full disk');
    const { fileId, uploadUrl } = await presign();
    expect((await rawRequest('PUT', uploadUrl, { chunks: [data] })).status).toBe(200);
    // Fill what is left of the file system, so that the sidecar `complete` writes finds no room.
    const filler = path.join(blobs, 'filler');
    const fd = fs.openSync(filler, 'w');
    try {
      const block = Buffer.alloc(4096, 1);
      try {
        for (;;) fs.writeSync(fd, block);
      } catch (error) {
        expect((error as NodeJS.ErrnoException).code).toBe('ENOSPC');
      }
    } finally {
      fs.closeSync(fd);
    }
    const before = blobFiles(blobs);
    try {
      const done = await client.post(`/storage/files/${fileId}/complete`);
      expect(done.status).toBe(503);
      expect(done.body).toEqual({
        statusCode: 503,
        code: 'storage_unavailable',
        message:
          "The coordinator's disk is full (ENOSPC): the file stays pending; complete it again once its operator has freed space",
      });
      expect((await client.get(`/storage/files/${fileId}`)).body).toMatchObject({ status: 'pending' });
      // The upload became the blob (a rename needs no room); no part of a sidecar is left.
      expect(blobFiles(blobs).filter((p) => p.includes('.tmp'))).toEqual([]);
      expect(blobFiles(blobs).length).toBeLessThanOrEqual(before.length);
    } finally {
      fs.rmSync(filler);
    }
    const done = await client.post(`/storage/files/${fileId}/complete`);
    expect(done.status).toBe(200);
    expect(done.body).toMatchObject({ status: 'active', size: data.length });
    const url = ((await client.get(`/storage/files/${fileId}/download-url`)).body as { downloadUrl: string })
      .downloadUrl;
    const got = await rawRequest('GET', url);
    expect(got.status).toBe(200);
    expect(got.headers.etag).toBe(`"${sha256(data)}"`);
    expect(got.body.equals(data)).toBe(true);
  });
});

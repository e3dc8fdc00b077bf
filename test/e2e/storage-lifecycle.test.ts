import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import type { ApiClient } from '../helpers/http.js';
import { defaultBindingId, rawRequest, storageClient, uploadFile } from '../helpers/storage.js';
import { eventually } from '../helpers/poll.js';

/**
 * File lifecycle (CONTRACT §6, docs/storage.md): the TTL sweeper and DELETE move files
 * `deleting` → `deleted` (blob gone) or `delete_failed` (retried with backoff); a file that a
 * release which is not yanked references answers 409 `file_in_use` and is never swept; a binding
 * that holds files cannot be deleted. Time is moved with an injected clock; the sweeper runs
 * every 50 ms. That a sweep left a file alone is shown by a witness: a `ttl` file uploaded after
 * it that only the moved clock makes due; once the witness is deleted, a sweep has run at the
 * moved time and passed the file over (a sweep claims every file due at once).
 */

describe('file lifecycle', () => {
  let t: TestCoordinator;
  let client: ApiClient;
  let bindingId: string;
  let offsetMs = 0;
  beforeAll(async () => {
    t = await startTestCoordinator({
      env: { DROVER_FILE_SWEEP_INTERVAL_MS: '50' },
      clock: { now: () => Date.now() + offsetMs },
    });
    bindingId = await defaultBindingId(t);
    client = await storageClient(t, [bindingId], ['read', 'write', 'delete']);
  });
  afterAll(() => t?.close());

  const blobPath = (fileId: string) => path.join(t.dataDir, 'blobs', fileId.slice(0, 2), fileId);
  const status = async (fileId: string) => (await client.get(`/storage/files/${fileId}`)).body.status as string;
  async function waitForStatus(fileId: string, wanted: string, ms = 5000): Promise<void> {
    await eventually(async () => (await status(fileId)) === wanted, ms, `file ${fileId} to be ${wanted}`);
  }
  /** A ttl file that expires `ttlSeconds` after now: the witness that a sweep ran past that. */
  const witness = async (ttlSeconds: number) =>
    (await uploadFile(client, 'witness', { cleanupRule: 'ttl', ttlSeconds })).fileId;
  /**
   * A release row referencing the file, written straight into the database: the API refuses a
   * file that expires as an artifact, and the sweeper must leave one alone all the same.
   */
  async function release(fileId: string, releaseStatus: 'draft' | 'published' | 'yanked'): Promise<string> {
    const appId = randomUUID();
    const releaseId = randomUUID();
    const now = new Date().toISOString();
    await t.sql.run(
      `INSERT INTO applications (id, org_id, slug, update_workflow_name, created_at) VALUES (?, ?, ?, 'update', ?)`,
      appId,
      t.orgId,
      `app-${appId.slice(0, 8)}`,
      now,
    );
    await t.sql.run(
      `INSERT INTO releases (id, application_id, version, sequence, channel, update_policy, status,
         artifact_file_id, checksum_sha256, size, created_at)
       VALUES (?, ?, '1.0.0', 1, 'stable', 'optional', ?, ?, ?, 1, ?)`,
      releaseId,
      appId,
      releaseStatus,
      fileId,
      'a'.repeat(64),
      now,
    );
    return releaseId;
  }

  // First: the owner's session would expire once the clock moves by days.
  it('refuses to delete a storage binding that still holds files, and allows it once they are deleted', async () => {
    const binding = await t.owner.post(`/orgs/${t.orgId}/storage-bindings`, {
      body: { name: 'temp', backend: 'local' },
    });
    const admin = await storageClient(t, [binding.body.id], ['read', 'write', 'delete']);
    const { fileId } = await uploadFile(admin, 'held', { cleanupRule: 'persistent' });
    const refused = await t.owner.delete(`/orgs/${t.orgId}/storage-bindings/${binding.body.id}`);
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({ code: 'conflict', message: expect.stringContaining('1 file(s)') });
    expect((await admin.delete(`/storage/files/${fileId}`)).body.status).toBe('deleted');
    expect((await t.owner.delete(`/orgs/${t.orgId}/storage-bindings/${binding.body.id}`)).status).toBe(200);
  });

  it('expires a ttl file end to end: the sweeper deletes it and its blob once its TTL has passed', async () => {
    const early = await witness(60);
    const expiring = await uploadFile(client, 'short lived', { cleanupRule: 'ttl', ttlSeconds: 120 });
    const kept = await uploadFile(client, 'kept', { cleanupRule: 'persistent' });
    const longer = await uploadFile(client, 'longer', { cleanupRule: 'ttl', ttlSeconds: 3600 });
    expect(fs.existsSync(blobPath(expiring.fileId))).toBe(true);
    offsetMs += 61_000; // past the witness's TTL, not the file's
    await waitForStatus(early, 'deleted');
    expect(await status(expiring.fileId)).toBe('active');
    expect(fs.existsSync(blobPath(expiring.fileId))).toBe(true);

    offsetMs += 60_000;
    await waitForStatus(expiring.fileId, 'deleted');
    const meta = (await client.get(`/storage/files/${expiring.fileId}`)).body;
    expect(meta.deletedAt).not.toBeNull();
    expect(fs.existsSync(blobPath(expiring.fileId))).toBe(false);
    expect(fs.existsSync(`${blobPath(expiring.fileId)}.meta`)).toBe(false);
    expect((await client.get(`/storage/files/${expiring.fileId}/download-url`)).status).toBe(409);
    expect(await status(kept.fileId)).toBe('active');
    expect(await status(longer.fileId)).toBe('active');
  });

  it('deletes a file at once on DELETE, answering its metadata, and again harmlessly', async () => {
    const { fileId, upload } = await uploadFile(client, 'to delete', { cleanupRule: 'persistent' });
    const url = (await client.get(`/storage/files/${fileId}/download-url`)).body.downloadUrl;
    const res = await client.delete(`/storage/files/${fileId}`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: fileId, status: 'deleted', deletedAt: expect.any(String) });
    expect(fs.existsSync(blobPath(fileId))).toBe(false);
    const again = await client.delete(`/storage/files/${fileId}`);
    expect(again.status).toBe(200);
    expect(again.body).toEqual(res.body);
    expect((await client.get(`/storage/files/${fileId}`)).body.status).toBe('deleted');
    expect((await client.post(`/storage/files/${fileId}/complete`)).status).toBe(409);
    expect((await rawRequest('GET', url)).status).toBe(404);
    expect((await rawRequest('PUT', upload.uploadUrl, { chunks: ['x'] })).status).toBe(409);
  });

  it('refuses to delete, and never sweeps, a file that a release which is not yanked references', async () => {
    const { fileId } = await uploadFile(client, 'artifact', { cleanupRule: 'ttl', ttlSeconds: 60 });
    const later = await witness(60);
    const releaseId = await release(fileId, 'published');
    const res = await client.delete(`/storage/files/${fileId}`);
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ statusCode: 409, code: 'file_in_use' });
    expect(res.body.message).toContain('yank the release first');

    offsetMs += 61_000;
    await waitForStatus(later, 'deleted');
    expect(await status(fileId)).toBe('active');
    expect(fs.existsSync(blobPath(fileId))).toBe(true);

    const draft = await uploadFile(client, 'draft artifact', { cleanupRule: 'persistent' });
    await release(draft.fileId, 'draft');
    expect((await client.delete(`/storage/files/${draft.fileId}`)).body.code).toBe('file_in_use');

    await t.sql.run(`UPDATE releases SET status = 'yanked' WHERE id = ?`, releaseId);
    // Yanked: the sweeper may take the expired file now, or DELETE does.
    const after = await client.delete(`/storage/files/${fileId}`);
    expect(after.status).toBe(200);
    expect(['deleted', 'deleting']).toContain(after.body.status);
    await waitForStatus(fileId, 'deleted');
  });

  it('marks a deletion the store refuses delete_failed and retries it after a backoff', async () => {
    const { fileId } = await uploadFile(client, 'stubborn', { cleanupRule: 'persistent' });
    // Make the blob impossible to remove: a non-empty directory where the file was.
    fs.rmSync(blobPath(fileId));
    fs.mkdirSync(blobPath(fileId));
    fs.writeFileSync(path.join(blobPath(fileId), 'inside'), 'x');

    const res = await client.delete(`/storage/files/${fileId}`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'delete_failed', deletedAt: null });
    // The attempts, the next attempt's time and the last error are not in the API: read from the database.
    const row = (await t.sql.get<{ delete_attempts: number; next_delete_at: string; last_delete_error: string }>(
      'SELECT delete_attempts, next_delete_at, last_delete_error FROM files WHERE id = ?',
      fileId,
    ))!;
    expect(row.delete_attempts).toBe(1);
    expect(Date.parse(row.next_delete_at) - (Date.now() + offsetMs)).toBeGreaterThan(25_000);
    expect(row.last_delete_error).toBeTruthy();
    expect((await client.get('/storage/files?status=delete_failed')).body.map((f: { id: string }) => f.id)).toEqual([
      fileId,
    ]);

    // Still failing at the first retry: the second wait is longer.
    offsetMs += 31_000;
    const second = await eventually(async () => {
      const current = (await t.sql.get<{ status: string; delete_attempts: number; next_delete_at: string }>(
        'SELECT status, delete_attempts, next_delete_at FROM files WHERE id = ?',
        fileId,
      ))!;
      return current.delete_attempts === 2 && current;
    });
    expect(second).toMatchObject({ status: 'delete_failed', delete_attempts: 2 });
    expect(Date.parse(second.next_delete_at) - (Date.now() + offsetMs)).toBeGreaterThan(55_000);

    fs.rmSync(blobPath(fileId), { recursive: true });
    offsetMs += 61_000;
    await waitForStatus(fileId, 'deleted');
  });

  it('deletes an upload abandoned as pending a day after its URL expired', async () => {
    const presign = await client.post('/storage/files/presign-upload', { body: { cleanupRule: 'persistent' } });
    const fileId = presign.body.fileId;
    const after = await witness(60);
    offsetMs += 900_000 + 23 * 3600_000;
    await waitForStatus(after, 'deleted');
    expect(await status(fileId)).toBe('pending');
    offsetMs += 3600_000 + 1000;
    await waitForStatus(fileId, 'deleted');
  });
});

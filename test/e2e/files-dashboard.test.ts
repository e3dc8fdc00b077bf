import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditEntries } from '../helpers/audit.js';
import { startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import type { ApiClient } from '../helpers/http.js';
import { addUser, outsider } from '../helpers/members.js';
import { defaultBindingId, storageClient, uploadFile, type PresignedUpload } from '../helpers/storage.js';

const UNKNOWN_ID = '00000000-0000-4000-8000-000000000000';

/** Members' file calls (docs/storage.md, "Files in the dashboard"): the storage API with a session. */
describe('files for members of the organization', () => {
  let t: TestCoordinator;
  let member: ApiClient;
  let memberId: string;
  let files: string;
  beforeAll(async () => {
    t = await startTestCoordinator();
    ({ client: member, userId: memberId } = await addUser(t.owner, t.orgId, 'member@example.test'));
    files = `/orgs/${t.orgId}/files`;
  });
  afterAll(() => t?.close());

  /** presign-upload as the member, PUT, complete: the completed file. */
  const memberUpload = async (data: string, body: Record<string, unknown> = { cleanupRule: 'persistent' }) => {
    const presigned = await member.post<PresignedUpload>(`${files}/presign-upload`, { body });
    expect(presigned.status).toBe(201);
    const put = await fetch(presigned.body.uploadUrl, {
      method: 'PUT',
      headers: presigned.body.headers,
      body: data,
    });
    expect(put.status).toBe(200);
    const done = await member.post(`${files}/${presigned.body.fileId}/complete`);
    expect(done.status).toBe(200);
    return done.body;
  };

  it('a member uploads into the only binding, is recorded as its uploader, and downloads it', async () => {
    const file = await memberUpload('firmware bytes', {
      filename: 'fw.bin',
      contentType: 'application/octet-stream',
      cleanupRule: 'persistent',
    });
    expect(file).toMatchObject({
      bindingId: await defaultBindingId(t),
      filename: 'fw.bin',
      size: 14,
      status: 'active',
      cleanupRule: 'persistent',
    });
    const row = await t.sql.get(
      'SELECT origin, created_by_user_id, created_by_token_id FROM files WHERE id = ?',
      file.id,
    );
    expect(row).toEqual({ origin: 'api', created_by_user_id: memberId, created_by_token_id: null });

    const url = await member.get<{ downloadUrl: string; expiresInSeconds: number }>(`${files}/${file.id}/download-url`);
    expect(url.status).toBe(200);
    const download = await fetch(url.body.downloadUrl);
    expect(download.status).toBe(200);
    expect(await download.text()).toBe('firmware bytes');
    expect((await member.get(`${files}/${file.id}`)).body).toEqual(file);
  });

  it("lists every file of the organization, an API token's too, filtered by binding and status", async () => {
    const bindingId = await defaultBindingId(t);
    const byToken = await uploadFile(await storageClient(t, null, ['write']), 'from CI');
    const pending = await member.post<PresignedUpload>(`${files}/presign-upload`, { body: { cleanupRule: 'ttl' } });
    const all = await member.get<{ id: string; status: string }[]>(files);
    expect(all.status).toBe(200);
    expect(all.body.map((f) => f.id)).toContain(byToken.fileId);
    expect(all.body[0]!.id).toBe(pending.body.fileId); // newest first
    const active = await member.get<{ id: string; status: string }[]>(`${files}?status=active&bindingId=${bindingId}`);
    expect(active.body.length).toBeGreaterThan(0);
    expect(active.body.every((f) => f.status === 'active')).toBe(true);
    expect(active.body.map((f) => f.id)).not.toContain(pending.body.fileId);
    const bad = await member.get(`${files}?status=lost`);
    expect(bad.status).toBe(422);
    expect(bad.body.details[0].path).toBe('querystring.status');
  });

  it('refuses completion before the upload and download of a file that is not active (409)', async () => {
    const presigned = await member.post<PresignedUpload>(`${files}/presign-upload`, { body: { cleanupRule: 'ttl' } });
    const early = await member.post(`${files}/${presigned.body.fileId}/complete`);
    expect(early.status).toBe(409);
    expect(early.body.message).toMatch(/PUT it to its uploadUrl first/);
    const url = await member.get(`${files}/${presigned.body.fileId}/download-url`);
    expect(url.status).toBe(409);
    expect(url.body.message).toMatch(/only an active file can be downloaded/);
  });

  it('names the binding when the organization has several, and refuses an unknown one (422)', async () => {
    const second = await t.owner.post<{ id: string }>(`/orgs/${t.orgId}/storage-bindings`, {
      body: { name: 'second', backend: 'local' },
    });
    expect(second.status).toBe(201);
    try {
      const unnamed = await member.post(`${files}/presign-upload`, { body: { cleanupRule: 'persistent' } });
      expect(unnamed.status).toBe(422);
      expect(unnamed.body.details).toEqual([
        { path: 'body.bindingId', message: 'is required: the organization has 2 storage bindings' },
      ]);
      const unknown = await member.post(`${files}/presign-upload`, {
        body: { bindingId: UNKNOWN_ID, cleanupRule: 'persistent' },
      });
      expect(unknown.status).toBe(422);
      expect(unknown.body.details).toEqual([
        { path: 'body.bindingId', message: 'no storage binding with this id in the organization' },
      ]);
      const chosen = await memberUpload('second binding', { bindingId: second.body.id, cleanupRule: 'persistent' });
      expect(chosen.bindingId).toBe(second.body.id);
      expect((await member.delete(`${files}/${chosen.id}`)).status).toBe(200);
    } finally {
      // Back to one binding for the other cases.
      expect((await t.owner.delete(`/orgs/${t.orgId}/storage-bindings/${second.body.id}`)).status).toBe(200);
    }
  });

  it('deletes a file, audits the member as its actor, and downloads no more', async () => {
    const file = await memberUpload('to be deleted');
    const deleted = await member.delete(`${files}/${file.id}`);
    expect(deleted.status).toBe(200);
    expect(deleted.body).toMatchObject({ id: file.id, status: 'deleted', deletedAt: expect.any(String) });
    const entry = (await auditEntries(t.owner, t.orgId, 'file.delete')).find((e) => e.targetId === file.id);
    expect(entry).toMatchObject({
      actorType: 'user',
      actorId: memberId,
      targetType: 'file',
      metadata: { bindingId: file.bindingId, status: 'deleted' },
    });
    expect((await member.get(`${files}/${file.id}/download-url`)).status).toBe(409);
  });

  it('hides files from other organizations and people without a session (404, 401)', async () => {
    const file = await memberUpload('private');
    const other = await outsider(t.owner, t.orgId, 'outsider@example.test');
    expect((await other.client.get(files)).status).toBe(404);
    expect((await other.client.get(`${files}/${file.id}`)).status).toBe(404);
    // Its own organization does not reach another's file.
    const ownOrg = `/orgs/${other.orgId}/files/${file.id}`;
    expect((await other.client.get(ownOrg)).status).toBe(404);
    expect((await other.client.get(`${ownOrg}/download-url`)).status).toBe(404);
    expect((await other.client.delete(ownOrg)).status).toBe(404);
    expect((await member.get(`${files}/${UNKNOWN_ID}`)).status).toBe(404);
    expect((await member.get(`${files}/not-a-uuid`)).status).toBe(404);
    expect((await t.api.get(files)).status).toBe(401);
    expect((await t.api.post(`${files}/presign-upload`, { body: { cleanupRule: 'ttl' } })).status).toBe(401);
  });
});

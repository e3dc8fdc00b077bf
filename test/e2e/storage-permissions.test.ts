import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import type { ApiClient, ApiResponse } from '../helpers/http.js';
import { issueApiToken } from '../helpers/tokens.js';
import { defaultBindingId, storageClient, uploadFile, type StoragePermission } from '../helpers/storage.js';

/**
 * Who may do what with stored files (spec: File storage, Authentication rule 3): each call needs
 * its permission (else 403); a file in a binding outside the token's grant is 404, like a file
 * that does not exist; `bindingIds: null` covers every binding of the organization.
 */

const UNKNOWN_ID = '00000000-0000-4000-8000-000000000000';
type Op = {
  name: string;
  permission: StoragePermission;
  /** The call on a file in `bindingId`; `fileId` is a fresh active file there. */
  call(client: ApiClient, fileId: string, bindingId: string): Promise<ApiResponse>;
  /** The status when allowed. */
  ok: number;
  /** The status for a file outside the grant. */
  outside: number;
};

const OPS: Op[] = [
  {
    name: 'presign-upload',
    permission: 'write',
    call: (c, _f, bindingId) =>
      c.post('/storage/files/presign-upload', { body: { bindingId, cleanupRule: 'persistent' } }),
    ok: 201,
    outside: 403, // a binding outside the grant: the token lacks the right (whether or not it exists)
  },
  {
    name: 'complete',
    permission: 'write',
    call: (c, f) => c.post(`/storage/files/${f}/complete`),
    ok: 200,
    outside: 404,
  },
  {
    name: 'download-url',
    permission: 'read',
    call: (c, f) => c.get(`/storage/files/${f}/download-url`),
    ok: 200,
    outside: 404,
  },
  { name: 'metadata', permission: 'read', call: (c, f) => c.get(`/storage/files/${f}`), ok: 200, outside: 404 },
  { name: 'delete', permission: 'delete', call: (c, f) => c.delete(`/storage/files/${f}`), ok: 200, outside: 404 },
];

describe('storage permissions', () => {
  let t: TestCoordinator;
  let admin: ApiClient;
  let bindingA: string;
  let bindingB: string;
  /** Added to the coordinator's clock (a token's expiry is passed by moving it). */
  let offsetMs = 0;
  beforeAll(async () => {
    t = await startTestCoordinator({
      env: { API_TOKEN_READ_RATE_LIMIT_PER_MINUTE: '2' },
      clock: { now: () => Date.now() + offsetMs },
    });
    bindingA = await defaultBindingId(t);
    const second = await t.owner.post(`/orgs/${t.orgId}/storage-bindings`, {
      body: { name: 'second', backend: 'local' },
    });
    expect(second.status).toBe(201);
    bindingB = second.body.id;
    admin = await storageClient(t, null, ['read', 'write', 'delete']);
  });
  afterAll(() => t?.close());

  const freshFile = async (bindingId: string) =>
    (await uploadFile(admin, 'content', { bindingId, cleanupRule: 'persistent' })).fileId;

  for (const granted of ['read', 'write', 'delete'] as const) {
    for (const scope of ['listed', 'null'] as const) {
      it(`answers each call as expected for a \`${granted}\` token whose grant is ${scope === 'null' ? 'every binding (null)' : 'one listed binding'}`, async () => {
        const client = await storageClient(t, scope === 'null' ? null : [bindingA], [granted]);
        for (const op of OPS) {
          for (const [where, bindingId] of [
            ['in', bindingA],
            ['out', bindingB],
          ] as const) {
            const inGrant = scope === 'null' || where === 'in';
            const expected = op.permission !== granted ? 403 : inGrant ? op.ok : op.outside;
            const res = await op.call(client, await freshFile(bindingId), bindingId);
            expect(res.status, `${op.name} on a file ${where} the grant: ${res.text}`).toBe(expected);
            if (expected >= 400) {
              expect(res.body).toMatchObject({
                statusCode: expected,
                code: expect.any(String),
                message: expect.any(String),
              });
            }
          }
        }
      });
    }
  }

  it('lists only the files of the bindings in the grant, and nothing for a binding outside it', async () => {
    const inA = await freshFile(bindingA);
    const inB = await freshFile(bindingB);
    const onlyA = await storageClient(t, [bindingA], ['read']);
    const every = await storageClient(t, null, ['read']);
    const listA = await onlyA.get('/storage/files');
    expect(listA.status).toBe(200);
    const idsA = listA.body.map((f: { id: string }) => f.id);
    expect(idsA).toContain(inA);
    expect(idsA).not.toContain(inB);
    expect(listA.body.every((f: { bindingId: string }) => f.bindingId === bindingA)).toBe(true);
    const outside = await onlyA.get(`/storage/files?bindingId=${bindingB}`);
    expect(outside.status).toBe(200);
    expect(outside.body).toEqual([]);
    const all = (await every.get('/storage/files')).body.map((f: { id: string }) => f.id);
    expect(all).toEqual(expect.arrayContaining([inA, inB]));
    const writer = await storageClient(t, null, ['write', 'delete']);
    expect((await writer.get('/storage/files')).status).toBe(403);
  });

  it('refuses every storage call without a valid token with 401', async () => {
    const revoked = await issueApiToken(t.owner, t.orgId, [
      { type: 'storage', bindingIds: null, permissions: ['read'] },
    ]);
    expect((await t.owner.delete(`/orgs/${t.orgId}/api-tokens/${revoked.id}`)).status).toBe(200);
    const expired = await issueApiToken(
      t.owner,
      t.orgId,
      [{ type: 'storage', bindingIds: null, permissions: ['read', 'write', 'delete'] }],
      { expiresAt: new Date(Date.now() + offsetMs + 1500).toISOString() },
    );
    offsetMs += 1600;
    const fileId = await freshFile(bindingA);
    for (const token of [null, 'drv_not-a-real-token-at-all-000000000000000', revoked.token, expired.token]) {
      const calls = [
        t.api.post('/storage/files/presign-upload', { token, body: { cleanupRule: 'persistent' } }),
        t.api.post(`/storage/files/${fileId}/complete`, { token }),
        t.api.get(`/storage/files/${fileId}/download-url`, { token }),
        t.api.get(`/storage/files/${fileId}`, { token }),
        t.api.get('/storage/files', { token }),
        t.api.delete(`/storage/files/${fileId}`, { token }),
      ];
      for (const res of await Promise.all(calls)) {
        expect(res.status, res.text).toBe(401);
        expect(res.body.code).toBe('unauthorized');
      }
    }
  });

  it('refuses a token without a storage grant with 403, before looking at the body or the file', async () => {
    const triggerOnly = t.api.withToken((await issueApiToken(t.owner, t.orgId, [])).token);
    const res = await triggerOnly.post('/storage/files/presign-upload', { body: { nonsense: true } });
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ code: 'forbidden', message: 'This API token has no storage grant' });
    expect((await triggerOnly.get(`/storage/files/${UNKNOWN_ID}`)).status).toBe(403);
    const readOnly = await storageClient(t, null, ['read']);
    const noWrite = await readOnly.post('/storage/files/presign-upload', { body: { cleanupRule: 'forever' } });
    expect(noWrite.status).toBe(403);
    expect(noWrite.body.message).toContain('`write`');
  });

  it('answers 404 for an unknown file and for a file of another organization', async () => {
    const other = await t.owner.post('/orgs', { body: { name: 'other org' } });
    expect(other.status).toBe(201);
    const otherBindings = await t.owner.get(`/orgs/${other.body.id}/storage-bindings`);
    let otherBinding = otherBindings.body[0]?.id as string | undefined;
    if (!otherBinding) {
      otherBinding = (
        await t.owner.post(`/orgs/${other.body.id}/storage-bindings`, { body: { name: 'o', backend: 'local' } })
      ).body.id as string;
    }
    const issued = await issueApiToken(t.owner, other.body.id, [
      { type: 'storage', bindingIds: null, permissions: ['read', 'write'] },
    ]);
    const foreign = await uploadFile(t.api.withToken(issued.token), 'theirs', {
      bindingId: otherBinding,
      cleanupRule: 'persistent',
    });
    for (const id of [UNKNOWN_ID, foreign.fileId]) {
      for (const res of [
        await admin.get(`/storage/files/${id}`),
        await admin.get(`/storage/files/${id}/download-url`),
        await admin.post(`/storage/files/${id}/complete`),
        await admin.delete(`/storage/files/${id}`),
      ]) {
        expect(res.status, res.text).toBe(404);
        expect(res.body).toMatchObject({ statusCode: 404, code: 'not_found', message: 'File not found' });
      }
    }
    expect((await admin.get('/storage/files')).body.map((f: { id: string }) => f.id)).not.toContain(foreign.fileId);
  });

  it('hides the files of a deleted binding', async () => {
    const third = await t.owner.post(`/orgs/${t.orgId}/storage-bindings`, {
      body: { name: 'third', backend: 'local' },
    });
    const fileId = await freshFile(third.body.id);
    expect((await admin.delete(`/storage/files/${fileId}`)).body.status).toBe('deleted');
    expect((await t.owner.delete(`/orgs/${t.orgId}/storage-bindings/${third.body.id}`)).status).toBe(200);
    expect((await admin.get(`/storage/files/${fileId}`)).status).toBe(404);
    expect((await admin.get('/storage/files?status=deleted')).body.map((f: { id: string }) => f.id)).not.toContain(
      fileId,
    );
  });

  it('counts storage calls against neither the read limit nor the token job limits, and audits no discovery', async () => {
    const issued = await issueApiToken(
      t.owner,
      t.orgId,
      [{ type: 'storage', bindingIds: [bindingA], permissions: ['read', 'write'] }],
      { rateLimitPerMinute: 1, rateLimitPerHour: 1, rateLimitPerDay: 1 },
    );
    const client = t.api.withToken(issued.token);
    const { fileId } = await uploadFile(client, 'x');
    for (let i = 0; i < 6; i++) {
      expect((await client.get(`/storage/files/${fileId}`)).status).toBe(200);
      expect((await client.get('/storage/files')).status).toBe(200);
      expect((await client.post('/storage/files/presign-upload', { body: { cleanupRule: 'persistent' } })).status).toBe(
        201,
      );
    }
    // The discovery read limit (2 per minute here) still applies to discovery.
    const reads = [await client.get('/token'), await client.get('/token'), await client.get('/token')];
    expect(reads.map((r) => r.status)).toEqual([200, 200, 429]);
    const audit = await t.owner.get(`/orgs/${t.orgId}/audit?action=api_token.discover`);
    expect(audit.status).toBe(200);
    expect(audit.body).toEqual([]);
    const deleted = await t.owner.get(`/orgs/${t.orgId}/audit?action=file.delete`);
    expect(deleted.body.length).toBeGreaterThan(0);
    expect(deleted.body[0]).toMatchObject({ actorType: 'api_token', targetType: 'file' });
  });
});

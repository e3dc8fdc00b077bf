import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import { addUser } from '../helpers/members.js';
import type { ApiClient } from '../helpers/http.js';

const SECRET = 'wJalrXUtnFEMI-K7MDENG-bPxRfiCYEXAMPLEKEY';
const S3 = {
  name: 'backups',
  backend: 's3',
  endpoint: 'https://s3.eu-west-1.example.test/',
  bucket: 'drover-backups',
  region: 'eu-west-1',
  accessKeyId: 'AKIAEXAMPLEKEYID',
  secretAccessKey: SECRET,
};
const BINDING_FIELDS = ['backend', 'createdAt', 'id', 'isDefault', 'name'];
const UNKNOWN_ID = '00000000-0000-4000-8000-000000000000';

describe('storage bindings', () => {
  let t: TestCoordinator;
  let member: ApiClient;
  let defaultId: string;
  beforeAll(async () => {
    t = await startTestCoordinator();
    member = (await addUser(t.owner, t.orgId, 'member@example.test')).client;
    defaultId = (await t.owner.get(`/orgs/${t.orgId}/storage-bindings`)).body[0].id;
  });
  afterAll(() => t?.close());

  it('lists the default local binding made at bootstrap', async () => {
    const res = await member.get(`/orgs/${t.orgId}/storage-bindings`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual([
      { id: defaultId, name: 'local', backend: 'local', isDefault: true, createdAt: expect.any(String) },
    ]);
  });

  it('creates an s3 binding, stores its settings and never returns or audits the secret', async () => {
    const res = await t.owner.post(`/orgs/${t.orgId}/storage-bindings`, { body: { ...S3, forcePathStyle: true } });
    expect(res.status).toBe(201);
    expect(Object.keys(res.body).sort()).toEqual(BINDING_FIELDS);
    expect(res.body).toMatchObject({ name: 'backups', backend: 's3', isDefault: false });
    // The secret is stored but never answered: read from the database.
    const stored = await t.sql.get<{ config: string }>('SELECT config FROM storage_bindings WHERE id = ?', res.body.id);
    expect(JSON.parse(stored!.config)).toEqual({
      endpoint: 'https://s3.eu-west-1.example.test',
      bucket: 'drover-backups',
      region: 'eu-west-1',
      accessKeyId: 'AKIAEXAMPLEKEYID',
      secretAccessKey: SECRET,
      forcePathStyle: true,
    });
    const responses = [
      res,
      await t.owner.get(`/orgs/${t.orgId}/storage-bindings`),
      await t.owner.get(`/orgs/${t.orgId}/storage-bindings/${res.body.id}`),
      await t.owner.get(`/orgs/${t.orgId}/audit`),
    ];
    for (const r of responses) {
      expect(r.status).toBe(200 + (r === res ? 1 : 0));
      expect(r.text).not.toContain(SECRET);
      expect(r.text).not.toContain('AKIAEXAMPLEKEYID');
    }
    const audit = responses[3]!.body.find((e: { action: string }) => e.action === 'storage_binding.create');
    expect(audit).toMatchObject({
      targetId: res.body.id,
      metadata: { name: 'backups', backend: 's3', bucket: 'drover-backups' },
    });
  });

  it('creates a local binding with no settings, and refuses a duplicate name with 409', async () => {
    const res = await t.owner.post(`/orgs/${t.orgId}/storage-bindings`, {
      body: { name: ' scratch ', backend: 'local' },
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ name: 'scratch', backend: 'local', isDefault: false });
    const dup = await t.owner.post(`/orgs/${t.orgId}/storage-bindings`, {
      body: { name: 'scratch', backend: 'local' },
    });
    expect(dup.status).toBe(409);
    expect(dup.body.code).toBe('conflict');
  });

  it('reports every bad s3 setting at once without echoing the secret', async () => {
    const res = await t.owner.post(`/orgs/${t.orgId}/storage-bindings`, {
      body: {
        name: 'bad',
        backend: 's3',
        endpoint: 'ftp://files.example.test',
        bucket: 'Bad_Bucket',
        region: 'eu west',
        secretAccessKey: 'has space secret',
      },
    });
    expect(res.status).toBe(422);
    expect(res.body.details.map((d: { path: string }) => d.path).sort()).toEqual(
      ['body.accessKeyId', 'body.bucket', 'body.endpoint', 'body.region', 'body.secretAccessKey'].sort(),
    );
    expect(res.text).not.toContain('has space secret');
  });

  it('refuses bad bodies with 422', async () => {
    const cases: unknown[] = [
      {},
      { name: 'x' },
      { backend: 'local' },
      { name: 'x', backend: 'gcs' },
      { name: 'x', backend: 'local', bucket: 'drover' },
      { name: 'x', backend: 'local', forcePathStyle: false },
      { ...S3, name: '' },
      { ...S3, name: '   ' },
      { ...S3, name: 'n'.repeat(256) },
      { ...S3, endpoint: 'https://user:pass@s3.example.test' },
      { ...S3, endpoint: 'https://s3.example.test/?x=1' },
      { ...S3, endpoint: 'not a url' },
      { ...S3, endpoint: `https://${'a'.repeat(3000)}.test` },
      { ...S3, bucket: 'ab' },
      { ...S3, forcePathStyle: 'yes' },
      { ...S3, secretAccessKey: 42 },
      { ...S3, secretAccessKey: 'k'.repeat(300) },
      { ...S3, config: { a: 1 } },
      { ...S3, isDefault: true },
    ];
    for (const body of cases) {
      const res = await t.owner.post(`/orgs/${t.orgId}/storage-bindings`, { body });
      expect(res.status, JSON.stringify(body).slice(0, 100)).toBe(422);
      expect(res.body.code).toBe('validation_failed');
      expect(res.text).not.toContain(SECRET);
    }
  });

  it("refuses an endpoint in the coordinator's own networks unless the operator allows its host", async () => {
    // The coordinator itself calls a binding's endpoint (complete, delete): an organization must
    // not point it at the loopback, a private network or a cloud metadata service.
    for (const endpoint of [
      'http://127.0.0.1:9',
      'http://localhost:8080/admin',
      'http://[::1]:9000',
      'http://[::ffff:127.0.0.1]:9000',
      'http://169.254.169.254/latest',
      'http://10.1.2.3:9000',
      'http://192.168.1.10',
      'http://0.0.0.0:9000',
    ]) {
      const res = await t.owner.post(`/orgs/${t.orgId}/storage-bindings`, {
        body: { ...S3, name: `local ${endpoint}`, endpoint },
      });
      expect(res.status, endpoint).toBe(422);
      expect(res.body.details).toEqual([
        {
          path: 'body.endpoint',
          message: expect.stringMatching(
            /^may not be used: .* an address of the coordinator's own networks, which storage bindings may reach only when the operator lists the host in DROVER_STORAGE_ALLOWED_HOSTS$/,
          ),
        },
      ]);
    }
    // Listed by the operator: that host and port only.
    const allowing = await startTestCoordinator({ env: { DROVER_STORAGE_ALLOWED_HOSTS: 'minio.lan, 127.0.0.1:9000' } });
    try {
      const create = (endpoint: string) =>
        allowing.owner.post(`/orgs/${allowing.orgId}/storage-bindings`, {
          body: { ...S3, name: endpoint, endpoint },
        });
      expect((await create('http://127.0.0.1:9000')).status).toBe(201);
      expect((await create('http://127.0.0.1:9001')).status).toBe(422);
    } finally {
      await allowing.close();
    }
  });

  it('lets members read but not create or delete', async () => {
    const create = await member.post(`/orgs/${t.orgId}/storage-bindings`, { body: { name: 'm', backend: 'local' } });
    expect(create.status).toBe(403);
    const remove = await member.delete(`/orgs/${t.orgId}/storage-bindings/${defaultId}`);
    expect(remove.status).toBe(403);
    expect((await member.get(`/orgs/${t.orgId}/storage-bindings/${defaultId}`)).status).toBe(200);
  });

  it('deletes a binding with 204, after which it is gone and its name free again', async () => {
    const created = await t.owner.post(`/orgs/${t.orgId}/storage-bindings`, {
      body: { name: 'temp', backend: 'local' },
    });
    const path = `/orgs/${t.orgId}/storage-bindings/${created.body.id}`;
    const res = await t.owner.delete(path);
    expect(res.status).toBe(200);
    expect(res.body).toEqual(created.body);
    expect((await t.owner.get(path)).status).toBe(404);
    expect((await t.owner.delete(path)).status).toBe(404);
    const names = (await t.owner.get(`/orgs/${t.orgId}/storage-bindings`)).body.map((b: { name: string }) => b.name);
    expect(names).not.toContain('temp');
    expect(
      (await t.owner.post(`/orgs/${t.orgId}/storage-bindings`, { body: { name: 'temp', backend: 'local' } })).status,
    ).toBe(201);
    const audit = await t.owner.get(`/orgs/${t.orgId}/audit?action=storage_binding.delete`);
    expect(audit.body[0]).toMatchObject({ targetId: created.body.id, metadata: { name: 'temp' } });
  });

  it('refuses to delete the default binding with 409', async () => {
    const res = await t.owner.delete(`/orgs/${t.orgId}/storage-bindings/${defaultId}`);
    expect(res.status).toBe(409);
    expect((await t.owner.get(`/orgs/${t.orgId}/storage-bindings/${defaultId}`)).status).toBe(200);
  });

  it('answers 404 for an unknown binding and for a malformed id', async () => {
    expect((await t.owner.get(`/orgs/${t.orgId}/storage-bindings/${UNKNOWN_ID}`)).status).toBe(404);
    expect((await t.owner.delete(`/orgs/${t.orgId}/storage-bindings/${UNKNOWN_ID}`)).status).toBe(404);
    expect((await t.owner.get(`/orgs/${t.orgId}/storage-bindings/local`)).status).toBe(404);
  });
});

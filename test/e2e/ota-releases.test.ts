import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import type { ApiClient } from '../helpers/http.js';
import { addUser, outsider } from '../helpers/members.js';
import {
  artifactUploader,
  createApp,
  createRelease,
  publishRelease,
  uploadArtifact,
  yankRelease,
  type AppBody,
  type ReleaseBody,
} from '../helpers/ota.js';
import { sha256, storageClient, uploadFile } from '../helpers/storage.js';
import { auditEntries } from '../helpers/audit.js';
import { generateEd25519KeyPair, privateKeyFromBase64, signRelease, signRotation, sortedKeys } from '@drover/shared';

const RELEASE_FIELDS = [
  'applicationId',
  'artifactFileId',
  'channel',
  'checksumSha256',
  'createdAt',
  'id',
  'notes',
  'publishedAt',
  'sequence',
  'signature',
  'size',
  'status',
  'updatePolicy',
  'version',
  'yankedAt',
];
const UNKNOWN_ID = '00000000-0000-4000-8000-000000000000';

describe('OTA releases', () => {
  let t: TestCoordinator;
  let member: ApiClient;
  let uploader: ApiClient;
  let app: AppBody;
  let artifact: string;
  beforeAll(async () => {
    t = await startTestCoordinator();
    member = (await addUser(t.owner, t.orgId, 'member@example.test')).client;
    uploader = await artifactUploader(t);
    app = await createApp(t.owner, t.orgId, { slug: 'kiosk', defaultChannel: 'stable' });
    artifact = await uploadArtifact(uploader, 'artifact v1');
  });
  afterAll(() => t?.close());

  const releases = (appId = app.id) => `/orgs/${t.orgId}/apps/${appId}/releases`;

  it('creates a draft with the next sequence, the artifact checksum and size, and defaults', async () => {
    const res = await member.post(releases(), { body: { version: '1.0.0', artifactFileId: artifact } });
    expect(res.status).toBe(201);
    expect(Object.keys(res.body).sort()).toEqual(RELEASE_FIELDS);
    expect(res.body).toMatchObject({
      applicationId: app.id,
      version: '1.0.0',
      channel: 'stable',
      updatePolicy: 'optional',
      status: 'draft',
      artifactFileId: artifact,
      checksumSha256: sha256('artifact v1'),
      size: 'artifact v1'.length,
      notes: null,
      publishedAt: null,
      yankedAt: null,
    });
    expect(res.body.sequence).toBeGreaterThanOrEqual(1);
    const read = await member.get(`${releases()}/${res.body.id}`);
    expect(read.body).toEqual(res.body);
  });

  it('orders by an application-wide sequence, not by the version label', async () => {
    const own = await createApp(t.owner, t.orgId, { slug: 'seq' });
    const a = await createRelease(t.owner, t.orgId, own.id, { version: '9.0', artifactFileId: artifact });
    const b = await createRelease(t.owner, t.orgId, own.id, {
      version: '1.0',
      artifactFileId: artifact,
      channel: 'beta',
    });
    expect([a.sequence, b.sequence]).toEqual([1, 2]);
    const list = await member.get<ReleaseBody[]>(releases(own.id));
    expect(list.body.map((r) => r.version)).toEqual(['1.0', '9.0']);
  });

  it('assigns unique, strictly increasing sequences to many concurrent creations', async () => {
    const own = await createApp(t.owner, t.orgId, { slug: 'concurrent' });
    const results = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        t.owner.post<ReleaseBody>(releases(own.id), {
          body: { version: `v${i}`, artifactFileId: artifact, channel: i % 2 ? 'beta' : 'stable' },
        }),
      ),
    );
    expect(results.map((r) => r.status)).toEqual(results.map(() => 201));
    const sequences = results.map((r) => r.body.sequence).sort((x, y) => x - y);
    expect(sequences).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
    // Creation order and sequence order agree.
    const byTime = [...results].sort((x, y) => x.body.createdAt.localeCompare(y.body.createdAt));
    for (let i = 1; i < byTime.length; i++) {
      if (byTime[i]!.body.createdAt !== byTime[i - 1]!.body.createdAt) {
        expect(byTime[i]!.body.sequence).toBeGreaterThan(byTime[i - 1]!.body.sequence);
      }
    }
    const published = await Promise.all(
      results.slice(0, 10).map((r) => t.owner.post(`${releases(own.id)}/${r.body.id}/publish`)),
    );
    expect(published.map((r) => r.status)).toEqual(published.map(() => 200));
  });

  it('filters the list by channel and status', async () => {
    const own = await createApp(t.owner, t.orgId, { slug: 'filters' });
    const stable = await createRelease(t.owner, t.orgId, own.id, { version: '1', artifactFileId: artifact });
    const beta = await createRelease(t.owner, t.orgId, own.id, {
      version: '2',
      artifactFileId: artifact,
      channel: 'beta',
    });
    await publishRelease(t.owner, t.orgId, own.id, beta.id);
    const ids = async (query: string) =>
      (await member.get<ReleaseBody[]>(`${releases(own.id)}${query}`)).body.map((r) => r.id);
    expect(await ids('?channel=beta')).toEqual([beta.id]);
    expect(await ids('?status=draft')).toEqual([stable.id]);
    expect(await ids('?status=published&channel=stable')).toEqual([]);
    expect(await ids('')).toEqual([beta.id, stable.id]);
    expect((await member.get(`${releases(own.id)}?status=gone`)).status).toBe(422);
    expect((await member.get(`${releases(own.id)}?channel=Be%20ta`)).status).toBe(422);
    expect((await member.get(`${releases(own.id)}?limit=3`)).status).toBe(422);
  });

  it('moves draft → published → yanked and refuses every other transition with 409', async () => {
    const r = await createRelease(member, t.orgId, app.id, { version: '2.0', artifactFileId: artifact });
    const path = `${releases()}/${r.id}`;
    const published = await member.post(`${path}/publish`);
    expect(published.status).toBe(200);
    expect(published.body).toMatchObject({ status: 'published', yankedAt: null });
    expect(published.body.publishedAt).toEqual(expect.any(String));
    expect((await member.post(`${path}/publish`)).status).toBe(409);
    const yanked = await member.post(`${path}/yank`, { body: {} });
    expect(yanked.status).toBe(200);
    expect(yanked.body).toMatchObject({ status: 'yanked', publishedAt: published.body.publishedAt });
    expect(yanked.body.yankedAt).toEqual(expect.any(String));
    const republish = await member.post(`${path}/publish`);
    expect(republish.status).toBe(409);
    expect(republish.body.details.status).toBe('yanked');
    expect((await member.post(`${path}/yank`)).status).toBe(409);
    expect((await member.post(`${path}/publish`, { body: { force: true } })).status).toBe(422);
  });

  it('yanks a draft, which withdraws it for good and frees its artifact for deletion', async () => {
    const storage = await storageClient(t, null, ['read', 'write', 'delete']);
    const { fileId } = await uploadFile(storage, 'draft artifact', { cleanupRule: 'persistent' });
    const r = await createRelease(member, t.orgId, app.id, { version: '2.1-rc', artifactFileId: fileId });
    const inUse = await storage.delete(`/storage/files/${fileId}`);
    expect([inUse.status, inUse.body.code]).toEqual([409, 'file_in_use']);
    const yanked = await member.post(`${releases()}/${r.id}/yank`);
    expect(yanked.status, yanked.text).toBe(200);
    expect(yanked.body).toMatchObject({ status: 'yanked', publishedAt: null, yankedAt: expect.any(String) });
    expect((await member.post(`${releases()}/${r.id}/publish`)).status).toBe(409);
    expect((await storage.delete(`/storage/files/${fileId}`)).body.status).toBe('deleted');
  });

  it('lets a draft change, but keeps a published release immutable', async () => {
    const r = await createRelease(member, t.orgId, app.id, { version: '3.0-rc', artifactFileId: artifact });
    const path = `${releases()}/${r.id}`;
    const changed = await member.patch(path, { body: { version: '3.0', notes: 'ready', updatePolicy: 'mandatory' } });
    expect(changed.status).toBe(200);
    expect(changed.body).toMatchObject({ version: '3.0', notes: 'ready', updatePolicy: 'mandatory', status: 'draft' });
    await publishRelease(member, t.orgId, app.id, r.id);
    const refused = await member.patch(path, { body: { version: '3.1' } });
    expect(refused.status).toBe(409);
    expect(refused.body.code).toBe('conflict');
    expect((await member.get(path)).body.version).toBe('3.0');
    expect((await member.patch(path, { body: { artifactFileId: artifact } })).status).toBe(422);
  });

  it('refuses an artifact that is not persistent with 422 naming artifactFileId', async () => {
    const { fileId } = await uploadFile(uploader, 'short-lived', { cleanupRule: 'ttl', ttlSeconds: 3600 });
    const res = await member.post(releases(), { body: { version: '1', artifactFileId: fileId } });
    expect(res.status).toBe(422);
    expect(res.body.code).toBe('validation_failed');
    expect(res.body.details).toEqual([{ path: 'body.artifactFileId', message: expect.stringContaining('persistent') }]);
  });

  it('refuses a missing, pending, deleted or foreign artifact with 422', async () => {
    const pending = await uploader.post<{ fileId: string }>('/storage/files/presign-upload', {
      body: { cleanupRule: 'persistent' },
    });
    const deleted = await uploadArtifact(uploader, 'gone soon');
    expect((await uploader.delete(`/storage/files/${deleted}`)).status).toBe(200);
    const stranger = await outsider(t.owner, t.orgId, 'stranger@example.test');
    const strangerApp = await createApp(stranger.client, stranger.orgId, { slug: 'theirs' });
    for (const artifactFileId of [UNKNOWN_ID, pending.body.fileId, deleted]) {
      const res = await member.post(releases(), { body: { version: '1', artifactFileId } });
      expect(res.status).toBe(422);
      expect(res.body.details[0].path).toBe('body.artifactFileId');
    }
    // Our file is not theirs.
    const foreign = await stranger.client.post(`/orgs/${stranger.orgId}/apps/${strangerApp.id}/releases`, {
      body: { version: '1', artifactFileId: artifact },
    });
    expect(foreign.status).toBe(422);
  });

  it.each([
    ['a missing version', { artifactFileId: UNKNOWN_ID }, 'body.version'],
    ['an empty version', { version: '', artifactFileId: UNKNOWN_ID }, 'body.version'],
    ['a numeric version', { version: 1, artifactFileId: UNKNOWN_ID }, 'body.version'],
    ['a version with a newline', { version: '1\n2', artifactFileId: UNKNOWN_ID }, 'body.version'],
    ['a huge version', { version: 'v'.repeat(50_000), artifactFileId: UNKNOWN_ID }, 'body.version'],
    ['a missing artifact', { version: '1' }, 'body.artifactFileId'],
    ['an artifact id that is not a UUID', { version: '1', artifactFileId: 'file-1' }, 'body.artifactFileId'],
    ['an unknown policy', { version: '1', artifactFileId: UNKNOWN_ID, updatePolicy: 'forced' }, 'body.updatePolicy'],
    ['a bad channel', { version: '1', artifactFileId: UNKNOWN_ID, channel: 'Stable!' }, 'body.channel'],
    ['notes that are too long', { version: '1', artifactFileId: UNKNOWN_ID, notes: 'n'.repeat(10_001) }, 'body.notes'],
    ['an unknown field', { version: '1', artifactFileId: UNKNOWN_ID, status: 'published' }, 'body.status'],
    [
      'a sequence that is not a positive integer',
      { version: '1', artifactFileId: UNKNOWN_ID, sequence: 0 },
      'body.sequence',
    ],
  ])('refuses %s with 422', async (_name, body, path) => {
    const res = await member.post(releases(), { body });
    expect(res.status).toBe(422);
    expect(res.body.details.map((d: { path: string }) => d.path)).toContain(path);
  });

  it('keeps the artifact of a release that is not yanked from deletion (409 file_in_use)', async () => {
    const file = await uploadArtifact(uploader, 'kept while released');
    const draft = await createRelease(member, t.orgId, app.id, { version: 'keep', artifactFileId: file });
    const refused = await uploader.delete(`/storage/files/${file}`);
    expect(refused.status).toBe(409);
    expect(refused.body.code).toBe('file_in_use');
    await publishRelease(member, t.orgId, app.id, draft.id);
    expect((await uploader.delete(`/storage/files/${file}`)).status).toBe(409);
    await yankRelease(member, t.orgId, app.id, draft.id);
    const deleted = await uploader.delete(`/storage/files/${file}`);
    expect(deleted.status).toBe(200);
    expect(deleted.body.status).toBe('deleted');
  });

  it('frees the artifacts of a deleted application', async () => {
    const own = await createApp(t.owner, t.orgId, { slug: 'deleted-with-releases' });
    const file = await uploadArtifact(uploader, 'freed with the app');
    const r = await createRelease(t.owner, t.orgId, own.id, { version: '1', artifactFileId: file });
    await publishRelease(t.owner, t.orgId, own.id, r.id);
    expect((await uploader.delete(`/storage/files/${file}`)).status).toBe(409);
    expect((await t.owner.delete(`/orgs/${t.orgId}/apps/${own.id}`)).status).toBe(204);
    expect((await t.owner.get(`${releases(own.id)}/${r.id}`)).status).toBe(404);
    expect((await uploader.delete(`/storage/files/${file}`)).status).toBe(200);
  });

  it('hides releases of other applications and organizations behind 404', async () => {
    const other = await createApp(t.owner, t.orgId, { slug: 'other' });
    const r = await createRelease(t.owner, t.orgId, app.id, { version: 'x', artifactFileId: artifact });
    expect((await member.get(`${releases(other.id)}/${r.id}`)).status).toBe(404);
    expect((await member.post(`${releases(other.id)}/${r.id}/publish`)).status).toBe(404);
    expect((await member.get(`${releases()}/${UNKNOWN_ID}`)).status).toBe(404);
    const stranger = await outsider(t.owner, t.orgId, 'stranger2@example.test');
    expect((await stranger.client.get(`${releases()}/${r.id}`)).status).toBe(404);
    expect((await stranger.client.get(releases())).status).toBe(404);
    expect((await stranger.client.post(`${releases()}/${r.id}/yank`)).status).toBe(404);
    const storageOnly = await storageClient(t, null, ['read']);
    expect((await storageOnly.get(releases())).status).toBe(401);
  });

  it('audits release.create, release.publish and release.yank', async () => {
    const r = await createRelease(member, t.orgId, app.id, { version: 'audited', artifactFileId: artifact });
    await publishRelease(member, t.orgId, app.id, r.id);
    await yankRelease(member, t.orgId, app.id, r.id);
    const audit = await t.owner.get<{ action: string; targetId: string; metadata: Record<string, unknown> }[]>(
      `/orgs/${t.orgId}/audit`,
    );
    const mine = audit.body.filter((e) => e.targetId === r.id);
    expect(mine.map((e) => e.action)).toEqual(['release.yank', 'release.publish', 'release.create']);
    expect(mine[2]!.metadata).toMatchObject({ applicationId: app.id, version: 'audited', artifactFileId: artifact });
  });
});

describe('OTA releases of an application with release keys', () => {
  let t: TestCoordinator;
  let uploader: ApiClient;
  let artifact: string;
  const k1 = generateEd25519KeyPair();
  const k2 = generateEd25519KeyPair();
  const content = 'signed artifact';
  beforeAll(async () => {
    t = await startTestCoordinator();
    uploader = await artifactUploader(t);
    artifact = await uploadArtifact(uploader, content);
  });
  afterAll(() => t?.close());

  const appPath = (id: string) => `/orgs/${t.orgId}/apps/${id}`;
  const sign = (version: string, sequence: number, key = k1, slug = 'signed') =>
    signRelease(
      { app: slug, version, sequence, sha256: sha256(content), size: content.length },
      privateKeyFromBase64(key.privateKey),
    );
  const create = (appId: string, body: Record<string, unknown>) =>
    t.owner.post(`${appPath(appId)}/releases`, { body: { artifactFileId: artifact, ...body } });

  it('creates a release only with its sequence and a signature by a listed key: 422 naming the field, 409 on the sequence', async () => {
    const res = await t.owner.post(`/orgs/${t.orgId}/apps`, {
      body: { slug: 'signed', updateWorkflowName: 'apply-update', releaseKeys: [k1.publicKey] },
    });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject({ releaseKeys: [k1.publicKey], releaseKeyGeneration: 0 });
    const app = res.body as AppBody;

    const detail = async (body: Record<string, unknown>) => {
      const r = await create(app.id, body);
      expect(r.status, r.text).toBe(422);
      expect(r.body.code).toBe('validation_failed');
      return r.body.details;
    };
    expect(await detail({ version: '1.0' })).toEqual([
      {
        path: 'body.sequence',
        message:
          'is required: the application signed has release keys, so a release is created with the sequence it was signed with (more than 0)',
      },
    ]);
    expect(await detail({ version: '1.0', sequence: 5 })).toEqual([
      {
        path: 'body.signature',
        message: 'is required: the application signed has release keys; sign the release with `drover release sign`',
      },
    ]);
    expect(await detail({ version: '1.0', sequence: 5, signature: sign('1.0', 5, k2) })).toEqual([
      {
        path: 'body.signature',
        message: `does not verify with any of the application's 1 release key(s) over {app: signed, version: 1.0, sequence: 5, sha256: ${sha256(content)}, size: ${content.length}}`,
      },
    ]);
    // Signed for another sequence or version: the signature covers them.
    expect((await detail({ version: '1.0', sequence: 6, signature: sign('1.0', 5) }))[0].path).toBe('body.signature');
    expect((await detail({ version: '1.1', sequence: 5, signature: sign('1.0', 5) }))[0].path).toBe('body.signature');

    const ok = await create(app.id, { version: '1.0', sequence: 5, signature: sign('1.0', 5) });
    expect(ok.status, ok.text).toBe(201);
    expect(ok.body).toMatchObject({ version: '1.0', sequence: 5, signature: sign('1.0', 5) });

    for (const sequence of [5, 4]) {
      const again = await create(app.id, { version: '0.9', sequence, signature: sign('0.9', sequence) });
      expect(again.status, again.text).toBe(409);
      expect(again.body).toMatchObject({
        code: 'conflict',
        message: `The sequence must be greater than every release of the application: got ${sequence}, the highest is 5`,
        details: { sequence, maxSequence: 5 },
      });
    }
    const entries = await auditEntries(t.owner, t.orgId, 'app.create');
    expect(entries.find((e) => e.targetId === app.id)?.metadata).toMatchObject({ releaseKeys: [k1.publicKey] });
  });

  it('takes a signature only on an application with keys; a given sequence must still be above the others', async () => {
    const plain = await createApp(t.owner, t.orgId, { slug: 'plain' });
    const signed = await create(plain.id, { version: '1.0', sequence: 3, signature: sign('1.0', 3, k1, 'plain') });
    expect(signed.status).toBe(422);
    expect(signed.body.details).toEqual([
      { path: 'body.signature', message: 'the application plain has no release keys: nothing can verify a signature' },
    ]);
    expect((await create(plain.id, { version: '1.0', sequence: 3 })).body).toMatchObject({
      sequence: 3,
      signature: null,
    });
    expect((await create(plain.id, { version: '1.1' })).body.sequence).toBe(4);
    expect((await create(plain.id, { version: '1.2', sequence: 2 })).status).toBe(409);
  });

  it('sets the first keys, refuses another set without a rotation (409), and rotates with one signed by a current key', async () => {
    const app = await createApp(t.owner, t.orgId, { slug: 'rotating' });
    const patch = (body: Record<string, unknown>) => t.owner.patch(appPath(app.id), { body });
    const bad = await patch({ releaseKeys: ['not-a-key'] });
    expect(bad.status).toBe(422);
    expect(bad.body.details[0].path).toBe('body.releaseKeys.0');
    const first = await patch({ releaseKeys: [k1.publicKey] });
    expect(first.status, first.text).toBe(200);
    expect(first.body).toMatchObject({ releaseKeys: [k1.publicKey], releaseKeyGeneration: 0 });
    expect((await patch({ releaseKeys: [k1.publicKey] })).status).toBe(200); // the same set: no change
    const swap = await patch({ releaseKeys: [k2.publicKey] });
    expect(swap.status).toBe(409);
    expect(swap.body.message).toMatch(
      /already has release keys: devices pinned them, so they change only through a rotation/,
    );

    const both = sortedKeys([k1.publicKey, k2.publicKey]);
    const forged = signRotation({ app: 'rotating', generation: 1, keys: both }, privateKeyFromBase64(k2.privateKey));
    const refused = await patch({ releaseKeyRotation: forged });
    expect(refused.status).toBe(422);
    expect(refused.body.details).toEqual([
      {
        path: 'body.releaseKeyRotation',
        message: 'is not signed by a key of the current set (signedBy must be one of them)',
      },
    ]);
    const rotation = signRotation({ app: 'rotating', generation: 1, keys: both }, privateKeyFromBase64(k1.privateKey));
    const rotated = await patch({ releaseKeyRotation: rotation });
    expect(rotated.status, rotated.text).toBe(200);
    expect(rotated.body).toMatchObject({ releaseKeys: both, releaseKeyGeneration: 1 });
    const replayed = await patch({ releaseKeyRotation: rotation });
    expect(replayed.status).toBe(422);
    expect(replayed.body.details[0].message).toBe("has generation 1, expected more than 1 (the current key set's)");
    const update = (await auditEntries(t.owner, t.orgId, 'app.update')).filter((e) => e.targetId === app.id).reverse();
    expect(update.map((e) => e.metadata)).toEqual([
      expect.objectContaining({
        changed: ['releaseKeys'],
        releaseKeys: { from: null, to: [k1.publicKey] },
        releaseKeyGeneration: 0,
      }),
      expect.objectContaining({
        changed: ['releaseKeys'],
        releaseKeys: { from: [k1.publicKey], to: both },
        releaseKeyGeneration: 1,
      }),
    ]);
  });
});

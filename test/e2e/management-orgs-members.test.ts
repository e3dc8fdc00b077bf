import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OWNER_EMAIL, startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import { addUser, MEMBER_PASSWORD } from '../helpers/members.js';

const UNKNOWN_ID = '00000000-0000-4000-8000-000000000000';

describe('organizations', () => {
  let t: TestCoordinator;
  beforeAll(async () => {
    t = await startTestCoordinator();
  });
  afterAll(() => t?.close());

  it('lists the bootstrapped organization with the owner role', async () => {
    const res = await t.owner.get('/orgs');
    expect(res.status).toBe(200);
    expect(res.body).toEqual([{ id: t.orgId, name: 'acme', role: 'owner', createdAt: expect.any(String) }]);
  });

  it('creates an organization whose creator is owner and which has a default local binding', async () => {
    const res = await t.owner.post('/orgs', { body: { name: '  Second org  ' } });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.any(String),
      name: 'Second org',
      role: 'owner',
      createdAt: expect.any(String),
    });
    const got = await t.owner.get(`/orgs/${res.body.id}`);
    expect(got.status).toBe(200);
    expect(got.body).toEqual(res.body);
    const bindings = await t.owner.get(`/orgs/${res.body.id}/storage-bindings`);
    expect(bindings.body).toEqual([
      { id: expect.any(String), name: 'local', backend: 'local', isDefault: true, createdAt: expect.any(String) },
    ]);
    const audit = await t.owner.get(`/orgs/${res.body.id}/audit`, {});
    expect(audit.body.map((e: { action: string }) => e.action)).toContain('org.create');
    const orgs = await t.owner.get('/orgs');
    expect(orgs.body.map((o: { name: string }) => o.name)).toEqual(['acme', 'Second org']);
  });

  it('refuses bad organization names with 422', async () => {
    for (const body of [
      {},
      { name: '' },
      { name: '   ' },
      { name: 42 },
      { name: 'x'.repeat(256) },
      { name: 'a', extra: 1 },
      { name: 'a\u0000b' },
    ]) {
      const res = await t.owner.post('/orgs', { body });
      expect(res.status, JSON.stringify(body)).toBe(422);
      expect(res.body).toMatchObject({ statusCode: 422, code: 'validation_failed', details: expect.any(Array) });
    }
    const notJson = await t.owner.post('/orgs', {
      rawBody: '{"name":',
      headers: { 'content-type': 'application/json' },
    });
    expect(notJson.status).toBe(422);
    const noBody = await t.owner.post('/orgs');
    expect(noBody.status).toBe(422);
  });

  it('needs a session', async () => {
    expect((await t.api.post('/orgs', { body: { name: 'x' } })).status).toBe(401);
    expect((await t.api.get(`/orgs/${t.orgId}`)).status).toBe(401);
    expect((await t.api.get(`/orgs/${t.orgId}/members`)).status).toBe(401);
  });

  it('answers 404 for an organization the caller does not belong to and for a malformed id', async () => {
    expect((await t.owner.get(`/orgs/${UNKNOWN_ID}`)).status).toBe(404);
    const bad = await t.owner.get('/orgs/not-a-uuid');
    expect(bad.status).toBe(404);
    expect(bad.body.code).toBe('not_found');
  });

  it('refuses unknown query parameters', async () => {
    const res = await t.owner.get(`/orgs/${t.orgId}?verbose=1`);
    expect(res.status).toBe(422);
  });
});

describe('members', () => {
  let t: TestCoordinator;
  let ownerId: string;
  beforeAll(async () => {
    t = await startTestCoordinator();
    const members = await t.owner.get(`/orgs/${t.orgId}/members`);
    ownerId = members.body[0].userId;
  });
  afterAll(() => t?.close());

  it('lists the owner as the only member at first', async () => {
    const res = await t.owner.get(`/orgs/${t.orgId}/members`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual([{ userId: ownerId, email: OWNER_EMAIL, role: 'owner', joinedAt: expect.any(String) }]);
  });

  it('creates a new user with a password, who can then sign in and see the organization', async () => {
    const res = await t.owner.post(`/orgs/${t.orgId}/members`, {
      body: { email: ' new.user@example.test ', password: MEMBER_PASSWORD, role: 'member' },
    });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      userId: expect.any(String),
      email: 'new.user@example.test',
      role: 'member',
      joinedAt: expect.any(String),
    });
    expect(res.body).not.toHaveProperty('password');
    expect(res.body).not.toHaveProperty('passwordHash');
    const client = await t.api.login('new.user@example.test', MEMBER_PASSWORD);
    expect((await client.get(`/orgs/${t.orgId}`)).body.role).toBe('member');
    // The password at rest (a hash, never the password) is not in the API.
    const stored = await t.sql.get<{ password_hash: string }>(
      'SELECT password_hash FROM users WHERE email = ?',
      'new.user@example.test',
    );
    expect(stored!.password_hash.startsWith('scrypt$')).toBe(true);
    expect(stored!.password_hash).not.toContain(MEMBER_PASSWORD);
  });

  it('adds an existing user without a password and refuses one with a password or one already a member', async () => {
    const { client: other } = await addUser(t.owner, t.orgId, 'existing@example.test');
    const second = await t.owner.post('/orgs', { body: { name: 'second' } });
    const path = `/orgs/${second.body.id}/members`;
    const withPassword = await t.owner.post(path, {
      body: { email: 'existing@example.test', password: 'another password', role: 'member' },
    });
    expect(withPassword.status).toBe(409);
    expect(withPassword.body.code).toBe('conflict');
    const added = await t.owner.post(path, { body: { email: 'EXISTING@example.test', role: 'owner' } });
    expect(added.status).toBe(201);
    expect(added.body).toMatchObject({ email: 'existing@example.test', role: 'owner' });
    expect((await other.get(`/orgs/${second.body.id}`)).body.role).toBe('owner');
    const again = await t.owner.post(path, { body: { email: 'existing@example.test', role: 'member' } });
    expect(again.status).toBe(409);
  });

  it('refuses a new user without a password, a short password, a bad email or a bad role with 422', async () => {
    const path = `/orgs/${t.orgId}/members`;
    const cases: [unknown, string][] = [
      [{ email: 'nopass@example.test', role: 'member' }, 'body.password'],
      [{ email: 'short@example.test', password: 'short', role: 'member' }, 'body.password'],
      [{ email: 'not-an-email', password: MEMBER_PASSWORD, role: 'member' }, 'body.email'],
      [{ email: 'a b@example.test', password: MEMBER_PASSWORD, role: 'member' }, 'body.email'],
      [{ email: 'x@example.test', password: MEMBER_PASSWORD, role: 'admin' }, 'body.role'],
      [{ email: 'x@example.test', password: MEMBER_PASSWORD }, 'body.role'],
      [{ password: MEMBER_PASSWORD, role: 'member' }, 'body.email'],
      [{ email: 7, password: MEMBER_PASSWORD, role: 'member' }, 'body.email'],
      [{ email: `${'a'.repeat(400)}@example.test`, password: MEMBER_PASSWORD, role: 'member' }, 'body.email'],
      [{ email: 'x@example.test', password: 'p'.repeat(5000), role: 'member' }, 'body.password'],
      [{ email: 'x@example.test', password: MEMBER_PASSWORD, role: 'member', admin: true }, 'body.admin'],
    ];
    for (const [body, detailPath] of cases) {
      const res = await t.owner.post(path, { body });
      expect(res.status, JSON.stringify(body).slice(0, 80)).toBe(422);
      expect(res.body.details.map((d: { path: string }) => d.path)).toContain(detailPath);
    }
    expect(await t.api.login('nopass@example.test', MEMBER_PASSWORD).catch(() => null)).toBeNull();
  });

  it('lets a member list members but refuses every owner-only member call with 403', async () => {
    const { userId, client } = await addUser(t.owner, t.orgId, 'plain.member@example.test');
    expect((await client.get(`/orgs/${t.orgId}/members`)).status).toBe(200);
    const calls = [
      client.post(`/orgs/${t.orgId}/members`, {
        body: { email: 'y@example.test', password: MEMBER_PASSWORD, role: 'member' },
      }),
      client.patch(`/orgs/${t.orgId}/members/${userId}`, { body: { role: 'owner' } }),
      client.patch(`/orgs/${t.orgId}/members/${ownerId}`, { body: { role: 'member' } }),
      client.delete(`/orgs/${t.orgId}/members/${ownerId}`),
      client.delete(`/orgs/${t.orgId}/members/${userId}`),
    ];
    for (const res of await Promise.all(calls)) {
      expect(res.status).toBe(403);
      expect(res.body.code).toBe('forbidden');
    }
    expect(
      (await t.owner.get(`/orgs/${t.orgId}/members`)).body.find((m: { userId: string }) => m.userId === userId).role,
    ).toBe('member');
  });

  it('changes roles and never lets the last owner be demoted or removed', async () => {
    const org = await t.owner.post('/orgs', { body: { name: 'owners' } });
    const orgId = org.body.id;
    const demote = await t.owner.patch(`/orgs/${orgId}/members/${ownerId}`, { body: { role: 'member' } });
    expect(demote.status).toBe(409);
    expect(demote.body.code).toBe('conflict');
    expect((await t.owner.delete(`/orgs/${orgId}/members/${ownerId}`)).status).toBe(409);

    const { userId: second } = await addUser(t.owner, orgId, 'second.owner@example.test');
    const promoted = await t.owner.patch(`/orgs/${orgId}/members/${second}`, { body: { role: 'owner' } });
    expect(promoted.status).toBe(200);
    expect(promoted.body).toMatchObject({ userId: second, role: 'owner' });
    const unchanged = await t.owner.patch(`/orgs/${orgId}/members/${second}`, { body: { role: 'owner' } });
    expect(unchanged.status).toBe(200);
    // Now the first owner may step down, and the second becomes the last owner.
    expect((await t.owner.patch(`/orgs/${orgId}/members/${ownerId}`, { body: { role: 'member' } })).body.role).toBe(
      'member',
    );
    const secondClient = await t.api.login('second.owner@example.test', MEMBER_PASSWORD);
    expect((await secondClient.delete(`/orgs/${orgId}/members/${second}`)).status).toBe(409);
    const removed = await secondClient.delete(`/orgs/${orgId}/members/${ownerId}`);
    expect(removed.status).toBe(200);
    expect(removed.body).toMatchObject({ userId: ownerId, role: 'member' });
    expect((await t.owner.get(`/orgs/${orgId}`)).status).toBe(404);
    const members = await secondClient.get(`/orgs/${orgId}/members`);
    expect(members.body).toEqual([
      { userId: second, email: 'second.owner@example.test', role: 'owner', joinedAt: expect.any(String) },
    ]);

    const audit = await secondClient.get(`/orgs/${orgId}/audit`);
    const actions = audit.body.map((e: { action: string }) => e.action);
    // The PATCH that changed nothing recorded nothing.
    expect(actions).toEqual(['member.remove', 'member.update', 'member.update', 'member.add', 'org.create']);
  });

  it('answers 404 for a user who is not a member and for a malformed user id', async () => {
    const { userId: elsewhere } = await addUser(
      t.owner,
      (await t.owner.post('/orgs', { body: { name: 'x' } })).body.id,
      'elsewhere@example.test',
    );
    for (const id of [UNKNOWN_ID, elsewhere]) {
      expect((await t.owner.patch(`/orgs/${t.orgId}/members/${id}`, { body: { role: 'member' } })).status).toBe(404);
      expect((await t.owner.delete(`/orgs/${t.orgId}/members/${id}`)).status).toBe(404);
    }
    expect((await t.owner.patch(`/orgs/${t.orgId}/members/nope`, { body: { role: 'member' } })).status).toBe(404);
    expect((await t.owner.delete(`/orgs/${t.orgId}/members/${'9'.repeat(300)}`)).status).toBeLessThan(500);
  });

  it('refuses a bad role patch with 422', async () => {
    for (const body of [{}, { role: 'root' }, { role: null }, { role: 'owner', email: 'x' }]) {
      expect((await t.owner.patch(`/orgs/${t.orgId}/members/${ownerId}`, { body })).status).toBe(422);
    }
  });

  it('makes exactly one user when the same new email is added concurrently', async () => {
    const body = { email: 'race@example.test', password: MEMBER_PASSWORD, role: 'member' };
    const results = await Promise.all([1, 2, 3].map(() => t.owner.post(`/orgs/${t.orgId}/members`, { body })));
    const statuses = results.map((r) => r.status).sort();
    expect(statuses).toEqual([201, 409, 409]);
  });
});

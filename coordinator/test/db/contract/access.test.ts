import { describe, expect, it } from 'vitest';
import type { ApiToken } from '../../../src/domain/model/api-tokens.js';
import { newId } from '../../../src/util/ids.js';
import { DATABASES, databasesOfThisFile } from './databases.js';

const AT = '2026-01-02T03:04:05.000Z';
const later = (ms: number) => new Date(Date.parse(AT) + ms).toISOString();
const databases = databasesOfThisFile();

describe.each(DATABASES)('users, organizations and members (%s)', (kind) => {
  const t = databases.use(kind);

  const user = async (email: string) => {
    const id = newId();
    await t.repos.users.insert({ id, email, passwordHash: `hash of ${email}`, createdAt: AT });
    return id;
  };

  it('finds a user by email whatever its case, and refuses a second user with the same email', async () => {
    const id = await user('Ada@Example.test');
    expect(await t.repos.users.findByEmail('ada@example.TEST')).toEqual({
      id,
      email: 'Ada@Example.test',
      passwordHash: 'hash of Ada@Example.test',
      createdAt: AT,
    });
    expect(await t.repos.users.findById(id)).toEqual({ id, email: 'Ada@Example.test', createdAt: AT });
    await expect(user('ADA@example.test')).rejects.toThrow();
    expect(await t.repos.users.count()).toBe(1);
    expect(await t.repos.users.findById(newId())).toBeNull();
  });

  it("inserts the bootstrap's owner once, whichever coordinators race to, and never beside another user", async () => {
    const owner = (email: string) => ({ id: newId(), email, passwordHash: 'h', createdAt: AT });
    const raced = await Promise.all([
      t.repos.users.insertIfNone(owner('first@example.test')),
      t.other.users.insertIfNone(owner('second@example.test')),
      t.other.users.insertIfNone(owner('third@example.test')),
    ]);
    expect(raced.filter(Boolean)).toHaveLength(1);
    expect(await t.repos.users.count()).toBe(1);
    expect(await t.repos.users.insertIfNone(owner('later@example.test'))).toBe(false);
  });

  it('creates an organization with its owner, lists it for its members, and counts them', async () => {
    const owner = await user('owner@example.test');
    const orgId = newId();
    await t.repos.orgs.create({ id: orgId, name: 'acme', createdAt: AT }, owner);
    expect(await t.repos.orgs.findById(orgId)).toEqual({ id: orgId, name: 'acme', createdAt: AT });
    expect(await t.repos.orgs.listForUser(owner)).toEqual([{ id: orgId, name: 'acme', createdAt: AT, role: 'owner' }]);
    expect(await t.repos.orgs.roleOf(orgId, owner)).toBe('owner');
    expect(await t.repos.orgs.count()).toBe(1);

    const member = await user('member@example.test');
    expect(await t.repos.orgs.addMember(orgId, member, 'member', later(1))).toBe(true);
    expect(await t.repos.orgs.addMember(orgId, member, 'owner', later(2))).toBe(false);
    expect(await t.repos.orgs.listMembers(orgId)).toEqual([
      { userId: owner, email: 'owner@example.test', role: 'owner', joinedAt: AT },
      { userId: member, email: 'member@example.test', role: 'member', joinedAt: later(1) },
    ]);
    expect(await t.repos.orgs.findMember(orgId, member)).toMatchObject({ role: 'member' });
    expect(await t.repos.orgs.findMember(orgId, newId())).toBeNull();
  });

  it('creates a user and its membership at once, or nothing when the email is taken', async () => {
    const owner = await user('owner@example.test');
    const orgId = newId();
    await t.repos.orgs.create({ id: orgId, name: 'acme', createdAt: AT }, owner);
    const id = newId();
    const created = { id, email: 'new@example.test', passwordHash: 'h', createdAt: AT };
    expect(await t.repos.orgs.createUserAndAddMember(created, orgId, 'member')).toBe('ok');
    expect(await t.repos.orgs.roleOf(orgId, id)).toBe('member');
    const again = { ...created, id: newId(), email: 'NEW@example.test' };
    expect(await t.repos.orgs.createUserAndAddMember(again, orgId, 'member')).toBe('email_taken');
    expect(await t.repos.users.count()).toBe(2);
  });

  it('keeps the last owner, also when two owners are demoted at once from two coordinators', async () => {
    const [a, b] = [await user('a@example.test'), await user('b@example.test')];
    const orgId = newId();
    await t.repos.orgs.create({ id: orgId, name: 'acme', createdAt: AT }, a);
    await t.repos.orgs.addMember(orgId, b, 'owner', AT);
    const outcomes = await Promise.all([
      t.repos.orgs.setRole(orgId, a, 'member'),
      t.other.orgs.setRole(orgId, b, 'member'),
    ]);
    expect(outcomes.sort()).toEqual(['last_owner', 'ok']);
    expect((await t.repos.orgs.listMembers(orgId)).filter((m) => m.role === 'owner')).toHaveLength(1);
    const owner = (await t.repos.orgs.listMembers(orgId)).find((m) => m.role === 'owner')!.userId;
    expect(await t.repos.orgs.removeMember(orgId, owner)).toBe('last_owner');
    const member = owner === a ? b : a;
    expect(await t.repos.orgs.removeMember(orgId, member)).toBe('ok');
    expect(await t.repos.orgs.removeMember(orgId, member)).toBe('not_found');
    expect(await t.repos.orgs.setRole(orgId, member, 'owner')).toBe('not_found');
  });
});

describe.each(DATABASES)('server secrets, signed-out sessions and enrollment tokens (%s)', (kind) => {
  const t = databases.use(kind);

  it('stores a server secret once: every coordinator reads the first value', async () => {
    const values = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        (i % 2 ? t.other : t.repos).serverSecrets.getOrCreate('k', () => `v${i}`, AT),
      ),
    );
    expect(new Set(values).size).toBe(1);
    expect(await t.repos.serverSecrets.getOrCreate('k', () => 'late', AT)).toBe(values[0]);
  });

  it('remembers signed-out sessions until they would have expired', async () => {
    await t.repos.signedOutSessions.add('s1', later(1000), AT);
    await t.repos.signedOutSessions.add('s1', later(1000), AT);
    expect(await t.repos.signedOutSessions.has('s1')).toBe(true);
    expect(await t.repos.signedOutSessions.has('s2')).toBe(false);
    await t.repos.signedOutSessions.add('s2', later(5000), later(2000));
    expect(await t.repos.signedOutSessions.has('s1')).toBe(false);
    expect(await t.repos.signedOutSessions.has('s2')).toBe(true);
  });
});

describe.each(DATABASES)('API tokens (%s)', (kind) => {
  const t = databases.use(kind);

  const setup = async () => {
    const userId = newId();
    await t.repos.users.insert({ id: userId, email: 'u@example.test', passwordHash: 'x', createdAt: AT });
    const orgId = newId();
    await t.repos.orgs.create({ id: orgId, name: 'acme', createdAt: AT }, userId);
    return { userId, orgId };
  };
  const token = (owner: { userId: string; orgId: string }, fields: Partial<ApiToken> = {}): ApiToken => ({
    id: newId(),
    orgId: owner.orgId,
    userId: owner.userId,
    name: 'ci',
    hint: 'drv_…abcd',
    scopes: [{ type: 'storage', bindingIds: null, permissions: ['read'] }],
    rateLimit: { perMinute: 5, perHour: null, perDay: 100 },
    expiresAt: null,
    revokedAt: null,
    createdAt: AT,
    ...fields,
  });

  it('finds a token by hash with its issuer role, lists the newest first, and revokes once', async () => {
    const owner = await setup();
    const first = token(owner, { expiresAt: later(60_000) });
    const second = token(owner, { name: 'deploy' });
    const third = token(owner, { name: 'same instant', createdAt: later(1) });
    const fourth = token(owner, { name: 'same instant too', createdAt: later(1) });
    for (const [i, x] of [first, second, third, fourth].entries()) await t.repos.apiTokens.insert(x, `hash${i}`);
    expect(await t.repos.apiTokens.findByHash('hash0')).toEqual(first);
    expect(await t.repos.apiTokens.findForAuthentication('hash1')).toEqual({ ...second, issuerRole: 'owner' });
    expect(await t.repos.apiTokens.findByHash('nope')).toBeNull();
    expect((await t.repos.apiTokens.listByOrg(owner.orgId)).map((x) => x.name)).toEqual([
      'same instant too',
      'same instant',
      'deploy',
      'ci',
    ]);
    expect(await t.repos.apiTokens.revoke(owner.orgId, first.id, later(5))).toEqual({ ...first, revokedAt: later(5) });
    expect((await t.repos.apiTokens.revoke(owner.orgId, first.id, later(9)))?.revokedAt).toBe(later(5));
    expect(await t.repos.apiTokens.revoke(newId(), first.id, later(9))).toBeNull();
    expect(await t.repos.apiTokens.findInOrg(newId(), first.id)).toBeNull();
  });

  it('answers a null issuer role once the issuer left the organization', async () => {
    const owner = await setup();
    const userId = newId();
    await t.repos.users.insert({ id: userId, email: 'm@example.test', passwordHash: 'x', createdAt: AT });
    await t.repos.orgs.addMember(owner.orgId, userId, 'member', AT);
    await t.repos.apiTokens.insert(token({ ...owner, userId }), 'h');
    expect((await t.repos.apiTokens.findForAuthentication('h'))?.issuerRole).toBe('member');
    await t.repos.orgs.removeMember(owner.orgId, userId);
    expect((await t.repos.apiTokens.findForAuthentication('h'))?.issuerRole).toBeNull();
  });
});

describe.each(DATABASES)('storage bindings (%s)', (kind) => {
  const t = databases.use(kind);

  it('takes a name once among the bindings not deleted, also when two coordinators try at once', async () => {
    const userId = newId();
    await t.repos.users.insert({ id: userId, email: 'u@example.test', passwordHash: 'x', createdAt: AT });
    const orgId = newId();
    await t.repos.orgs.create({ id: orgId, name: 'acme', createdAt: AT }, userId);
    const binding = (name: string, createdAt = AT) => ({
      id: newId(),
      orgId,
      name,
      backend: 's3' as const,
      config: { bucket: 'b', secretAccessKey: 'k' },
      isDefault: false,
      createdAt,
    });
    const local = { ...binding('default'), backend: 'local' as const, config: {}, isDefault: true };
    await t.repos.storageBindings.insert(local);
    const tries = await Promise.all(
      Array.from({ length: 4 }, (_, i) => (i % 2 ? t.other : t.repos).storageBindings.insertIfNameFree(binding('s3'))),
    );
    expect(tries.filter(Boolean)).toHaveLength(1);
    const listed = await t.repos.storageBindings.listByOrg(orgId);
    expect(listed.map((b) => [b.name, b.isDefault])).toEqual([
      ['default', true],
      ['s3', false],
    ]);
    expect(await t.repos.storageBindings.findInOrg(orgId, local.id)).toEqual(local);
    const s3 = listed[1]!;
    expect(s3.config).toEqual({ bucket: 'b', secretAccessKey: 'k' });
    expect(await t.repos.storageBindings.softDelete(orgId, s3.id, later(1))).toBe(true);
    expect(await t.repos.storageBindings.softDelete(orgId, s3.id, later(2))).toBe(false);
    expect(await t.repos.storageBindings.findInOrg(orgId, s3.id)).toBeNull();
    expect(await t.repos.storageBindings.insertIfNameFree(binding('s3', later(3)))).toBe(true);
  });
});

describe.each(DATABASES)('audit log (%s)', (kind) => {
  const t = databases.use(kind);

  it('stores entries and lists them newest first, filtered and paged', async () => {
    const orgId = 'org-1';
    const entry = (i: number, fields: object = {}) => ({
      orgId,
      actorType: 'user' as const,
      actorId: 'u1',
      action: i % 2 ? ('trigger.run' as const) : ('api_token.issue' as const),
      targetType: 'trigger',
      targetId: `t${i % 3}`,
      metadata: { i },
      createdAt: later(i * 1000),
      ...fields,
    });
    await t.repos.audit.insertMany(Array.from({ length: 6 }, (_, i) => entry(i)));
    await t.repos.audit.insertMany([entry(6, { orgId: 'org-2' }), entry(7, { actorType: 'system', actorId: null })]);
    await t.repos.audit.insertMany([]);
    const all = await t.repos.audit.list(orgId, { limit: 10 });
    expect(all.map((e) => e.metadata.i)).toEqual([7, 5, 4, 3, 2, 1, 0]);
    expect(all[1]).toEqual({
      id: all[1]!.id,
      orgId,
      actorType: 'user',
      actorId: 'u1',
      action: 'trigger.run',
      targetType: 'trigger',
      targetId: 't2',
      metadata: { i: 5 },
      createdAt: later(5000),
    });
    const ids = async (q: object) => (await t.repos.audit.list(orgId, { limit: 10, ...q })).map((e) => e.metadata.i);
    expect(await ids({ action: 'api_token.issue' })).toEqual([4, 2, 0]);
    expect(await ids({ targetId: 't1', action: 'trigger.run' })).toEqual([7, 1]);
    expect(await ids({ actorType: 'system' })).toEqual([7]);
    expect(
      await ids({ actorId: 'u1', targetType: 'trigger', createdAfter: later(2000), createdBefore: later(5000) }),
    ).toEqual([4, 3, 2]);
    expect(await ids({ limit: 2, before: all[2]!.id })).toEqual([3, 2]);
  });
});

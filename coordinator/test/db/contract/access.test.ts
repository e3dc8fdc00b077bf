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
      sessionGeneration: 0,
      passwordByInviter: false,
    });
    expect(await t.repos.users.findById(id)).toEqual({
      id,
      email: 'Ada@Example.test',
      createdAt: AT,
      sessionGeneration: 0,
    });
    await expect(user('ADA@example.test')).rejects.toThrow();
    expect(await t.repos.users.count()).toBe(1);
    expect(await t.repos.users.findById(newId())).toBeNull();
  });

  it('folds only ASCII letters in emails: ÉMILE and émile are two accounts, EMILE and emile one', async () => {
    // What SQLite's COLLATE NOCASE does; PostgreSQL's lower() of the database's locale folded É too.
    const upper = await user('ÉMILE@x.test');
    const lower = await user('émile@x.test');
    expect(await t.repos.users.findByEmail('ÉMILE@x.test')).toMatchObject({ id: upper });
    expect(await t.repos.users.findByEmail('émile@x.test')).toMatchObject({ id: lower });
    expect(await t.repos.users.findByEmail('Émile@X.TEST')).toMatchObject({ id: upper });
    expect(await t.repos.users.findByEmail('éMILE@x.test')).toMatchObject({ id: lower });
    const ascii = await user('EMILE@x.test');
    expect(await t.repos.users.findByEmail('emile@x.test')).toMatchObject({ id: ascii });
    await expect(user('emile@X.test')).rejects.toThrow();
    // The Kelvin sign is no K.
    const kelvin = await user('\u212Aim@x.test');
    expect(await t.repos.users.findByEmail('kim@x.test')).toBeNull();
    expect(await t.repos.users.findByEmail('\u212AIM@X.test')).toMatchObject({ id: kelvin });
    expect(await t.repos.users.count()).toBe(4);
  });

  it('lists members who joined at once by their email, its ASCII letters without case, then by bytes', async () => {
    const owner = await user('owner@example.test');
    const orgId = newId();
    await t.repos.orgs.create({ id: orgId, name: 'acme', createdAt: AT }, owner);
    // An en_US collation sorts `a-c` after `AB`, `b_` after `Ba` and `é` before `f`; SQLite's NOCASE by bytes.
    const emails = ['a-c@x.test', 'AB@x.test', 'b_@x.test', 'Ba@x.test', 'f@x.test', 'é@x.test', 'É@x.test'];
    for (const email of emails) await t.repos.orgs.addMember(orgId, await user(email), 'member', later(1));
    expect((await t.repos.orgs.listMembers(orgId)).map((m) => m.email)).toEqual([
      'owner@example.test',
      'a-c@x.test',
      'AB@x.test',
      'b_@x.test',
      'Ba@x.test',
      'f@x.test',
      'É@x.test',
      'é@x.test',
    ]);
  });

  it('replaces a password and ends the sessions, each moving the session generation on once', async () => {
    const id = await user('gen@example.test');
    expect(await t.repos.users.setPassword(id, 'new hash')).toBe(1);
    expect(await t.repos.users.findByEmail('gen@example.test')).toMatchObject({
      passwordHash: 'new hash',
      sessionGeneration: 1,
    });
    const ended = await Promise.all([t.repos.users.endSessions(id), t.other.users.endSessions(id)]);
    expect(ended.sort()).toEqual([2, 3]);
    expect(await t.repos.users.findById(id)).toMatchObject({ sessionGeneration: 3 });
    expect(await t.repos.users.setPassword(newId(), 'h')).toBeNull();
    expect(await t.repos.users.endSessions(newId())).toBeNull();
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
      { userId: owner, email: 'owner@example.test', role: 'owner', joinedAt: AT, ssoGroup: null },
      { userId: member, email: 'member@example.test', role: 'member', joinedAt: later(1), ssoGroup: null },
    ]);
    expect(await t.repos.orgs.findMember(orgId, member)).toMatchObject({ role: 'member' });
    expect(await t.repos.orgs.findMember(orgId, newId())).toBeNull();
  });

  it('lists the organizations of an exact name, oldest first', async () => {
    const owner = await user('names@example.test');
    const [first, second] = [newId(), newId()];
    await t.repos.orgs.create({ id: first, name: 'Platform', createdAt: AT }, owner);
    await t.repos.orgs.create({ id: second, name: 'Platform', createdAt: later(1) }, owner);
    expect((await t.repos.orgs.listByName('Platform', 2)).map((o) => o.id)).toEqual([first, second]);
    expect((await t.repos.orgs.listByName('Platform', 1)).map((o) => o.id)).toEqual([first]);
    expect(await t.repos.orgs.listByName('platform', 2)).toEqual([]);
  });

  it('keeps the last owner, also when two owners are demoted at once from two coordinators', async () => {
    const [a, b] = [await user('a@example.test'), await user('b@example.test')];
    const orgId = newId();
    await t.repos.orgs.create({ id: orgId, name: 'acme', createdAt: AT }, a);
    await t.repos.orgs.addMember(orgId, b, 'owner', AT);
    const outcomes = await Promise.all([
      t.repos.orgs.setRole(orgId, a, 'member', AT),
      t.other.orgs.setRole(orgId, b, 'member', AT),
    ]);
    expect(outcomes.map((o) => (typeof o === 'object' ? 'ok' : o)).sort()).toEqual(['last_owner', 'ok']);
    expect((await t.repos.orgs.listMembers(orgId)).filter((m) => m.role === 'owner')).toHaveLength(1);
    const owner = (await t.repos.orgs.listMembers(orgId)).find((m) => m.role === 'owner')!.userId;
    expect(await t.repos.orgs.removeMember(orgId, owner, AT)).toBe('last_owner');
    const member = owner === a ? b : a;
    expect(await t.repos.orgs.removeMember(orgId, member, AT)).toEqual({
      revokedInvitations: [],
      revokedEnrollmentTokens: [],
    });
    expect(await t.repos.orgs.removeMember(orgId, member, AT)).toBe('not_found');
    expect(await t.repos.orgs.setRole(orgId, member, 'owner', AT)).toBe('not_found');
  });

  it("marks the memberships the role map sets, keeps the role before it (an owner's latest), and gives it back when it withdraws", async () => {
    const owner = await user('map-owner@example.test');
    const [added, invited, kept] = [
      await user('added@example.test'),
      await user('invited@example.test'),
      await user('kept@example.test'),
    ];
    const orgId = newId();
    await t.repos.orgs.create({ id: orgId, name: 'mapped', createdAt: AT }, owner);
    expect(await t.repos.orgs.addMember(orgId, added, 'operator', AT, { group: 'ops' })).toBe(true);
    await t.repos.orgs.addMember(orgId, invited, 'viewer', AT);
    await t.repos.orgs.addMember(orgId, kept, 'owner', AT);
    expect(await t.repos.orgs.listRoleMapMemberships(invited)).toEqual([]);

    // The map moves the invited viewer twice: the role before is the first one, the group the last.
    await t.repos.orgs.setRole(orgId, invited, 'operator', AT, { group: 'ops' });
    await t.repos.orgs.setRole(orgId, invited, 'member', AT, { group: 'devs' });
    await t.repos.orgs.keepMapGroup(orgId, invited, 'staff');
    // An owner's change leaves the mark and is what a withdrawal gives back; keeping the group of a
    // membership the map never set does nothing.
    await t.repos.orgs.setRole(orgId, kept, 'member', AT, { group: 'ops' });
    await t.repos.orgs.setRole(orgId, kept, 'viewer', AT);
    await t.repos.orgs.keepMapGroup(orgId, owner, 'ops');
    const mapped = { orgId, orgName: 'mapped' };
    expect(await t.repos.orgs.listRoleMapMemberships(invited)).toEqual([
      { ...mapped, role: 'member', group: 'staff', roleBefore: 'viewer' },
    ]);
    expect(await t.repos.orgs.listRoleMapMemberships(kept)).toEqual([
      { ...mapped, role: 'viewer', group: 'ops', roleBefore: 'viewer' },
    ]);
    expect((await t.repos.orgs.listMembers(orgId)).map((m) => [m.email, m.ssoGroup])).toEqual([
      ['added@example.test', 'ops'],
      ['invited@example.test', 'staff'],
      ['kept@example.test', 'ops'],
      ['map-owner@example.test', null],
    ]);

    const none = { revokedInvitations: [], revokedEnrollmentTokens: [] };
    expect(await t.repos.orgs.withdrawRoleMap(orgId, invited, later(1))).toEqual({
      ...none,
      from: 'member',
      to: 'viewer',
      group: 'staff',
    });
    expect(await t.repos.orgs.findMember(orgId, invited)).toMatchObject({ role: 'viewer', ssoGroup: null });
    expect(await t.repos.orgs.withdrawRoleMap(orgId, invited, later(1))).toBe('not_found');
    expect(await t.repos.orgs.withdrawRoleMap(orgId, added, later(1))).toEqual({
      ...none,
      from: 'operator',
      to: null,
      group: 'ops',
      revokedEnrollmentTokens: [],
    });
    expect(await t.repos.orgs.findMember(orgId, added)).toBeNull();
    expect(await t.repos.orgs.withdrawRoleMap(orgId, owner, later(1))).toBe('not_found');
    // Set by the map again later, the role before is the one it had then.
    await t.repos.orgs.setRole(orgId, invited, 'owner', later(2), { group: 'ops' });
    expect(await t.repos.orgs.listRoleMapMemberships(invited)).toEqual([
      { ...mapped, role: 'owner', group: 'ops', roleBefore: 'viewer' },
    ]);
  });
});

describe.each(DATABASES)('invitations (%s)', (kind) => {
  const t = databases.use(kind);
  const WEEK = 7 * 24 * 3600_000;

  const setup = async () => {
    const owner = newId();
    await t.repos.users.insert({ id: owner, email: 'owner@example.test', passwordHash: 'h', createdAt: AT });
    const orgId = newId();
    await t.repos.orgs.create({ id: orgId, name: 'acme', createdAt: AT }, owner);
    const invite = (email: string, at = AT, role: 'owner' | 'member' = 'member') => ({
      id: newId(),
      orgId,
      email,
      role,
      createdBy: owner,
      createdAt: at,
      expiresAt: new Date(Date.parse(at) + WEEK).toISOString(),
    });
    return { owner, orgId, invite };
  };

  it("records a pending invitation, creating a new email's user but leaving an existing account as it is", async () => {
    const { owner, orgId, invite } = await setup();
    const fresh = invite('New@Example.test');
    const newUser = { id: newId(), email: 'New@Example.test', passwordHash: 'first', createdAt: AT };
    expect(await t.repos.invitations.create(fresh, newUser)).toBe('ok');
    expect(await t.repos.users.findByEmail('new@example.test')).toMatchObject({
      id: newUser.id,
      passwordHash: 'first',
      passwordByInviter: true,
    });
    expect(await t.repos.invitations.findById(fresh.id)).toEqual({
      id: fresh.id,
      orgId,
      orgName: 'acme',
      email: 'New@Example.test',
      role: 'member',
      status: 'pending',
      invitedBy: { userId: owner, email: 'owner@example.test' },
      createdAt: AT,
      expiresAt: fresh.expiresAt,
      endedAt: null,
    });
    // The owner's own account: invited elsewhere, its password is not touched.
    const other = newId();
    await t.repos.orgs.create({ id: other, name: 'other', createdAt: AT }, newUser.id);
    const again = { ...invite('OWNER@example.test'), orgId: other, createdBy: newUser.id };
    const attempt = { id: newId(), email: 'OWNER@example.test', passwordHash: 'chosen by a stranger', createdAt: AT };
    expect(await t.repos.invitations.create(again, attempt)).toBe('ok');
    expect(await t.repos.users.findByEmail('owner@example.test')).toMatchObject({
      id: owner,
      passwordHash: 'h',
      passwordByInviter: false,
    });
    expect(await t.repos.users.count()).toBe(2);
    // The inviter's password is replaced once (the holder's first single sign-on), never the holder's own.
    expect(await t.repos.users.replaceInvitersPassword(owner, '!sso')).toBeNull();
    expect(await t.repos.users.replaceInvitersPassword(newUser.id, '!sso')).toBe(1);
    expect(await t.repos.users.replaceInvitersPassword(newUser.id, '!sso')).toBeNull();
    expect(await t.repos.users.findByEmail('new@example.test')).toMatchObject({
      passwordHash: '!sso',
      passwordByInviter: false,
      sessionGeneration: 1,
    });
    expect(await t.repos.invitations.findById(newId())).toBeNull();
  });

  it('refuses a member and a second pending invitation, and replaces one that expired', async () => {
    const { orgId, invite } = await setup();
    expect(await t.repos.invitations.create(invite('owner@EXAMPLE.test'), null)).toBe('already_member');
    const first = invite('dev@example.test');
    expect(await t.repos.invitations.create(first, null)).toBe('ok');
    expect(await t.repos.invitations.create(invite('DEV@example.test', later(WEEK - 1)), null)).toBe('already_invited');
    const renewed = invite('dev@example.test', later(WEEK));
    expect(await t.repos.invitations.create(renewed, null)).toBe('ok');
    expect(await t.repos.invitations.findById(first.id)).toMatchObject({ status: 'expired', endedAt: later(WEEK) });
    expect((await t.repos.invitations.listPending(orgId)).map((i) => i.id)).toEqual([renewed.id]);
  });

  it('records one invitation when two coordinators invite the same email at once', async () => {
    const { orgId, invite } = await setup();
    const outcomes = await Promise.all([
      t.repos.invitations.create(invite('race@example.test'), null),
      t.other.invitations.create(invite('RACE@example.test'), null),
    ]);
    expect(outcomes.sort()).toEqual(['already_invited', 'ok']);
    expect(await t.repos.invitations.listPending(orgId)).toHaveLength(1);
  });

  it('folds only ASCII letters in invitations: ÉMILE and émile are two invitees, EMILE and emile one', async () => {
    const { orgId, invite } = await setup();
    const upper = invite('ÉMILE@x.test');
    const lower = invite('émile@x.test');
    expect(await t.repos.invitations.create(upper, null)).toBe('ok');
    expect(await t.repos.invitations.create(lower, null)).toBe('ok');
    expect((await t.repos.invitations.listForEmail('Émile@X.test', later(1))).map((i) => i.id)).toEqual([upper.id]);
    expect((await t.repos.invitations.listForEmail('éMILE@x.test', later(1))).map((i) => i.id)).toEqual([lower.id]);
    expect(await t.repos.invitations.create(invite('EMILE@x.test'), null)).toBe('ok');
    expect(await t.repos.invitations.create(invite('emile@X.TEST'), null)).toBe('already_invited');
    // A member's email in another case of a non-ASCII letter is someone else.
    const member = newId();
    await t.repos.users.insert({ id: member, email: 'ÖRJAN@x.test', passwordHash: 'h', createdAt: AT });
    await t.repos.orgs.addMember(orgId, member, 'member', AT);
    expect(await t.repos.invitations.create(invite('Örjan@X.test'), null)).toBe('already_member');
    const newUser = { id: newId(), email: 'örjan@x.test', passwordHash: 'first', createdAt: AT };
    expect(await t.repos.invitations.create(invite('örjan@x.test'), newUser)).toBe('ok');
    expect(await t.repos.users.findByEmail('örjan@x.test')).toMatchObject({ id: newUser.id });
    expect(await t.repos.users.findByEmail('ÖRJAN@x.test')).toMatchObject({ id: member });
    expect(await t.repos.invitations.listPending(orgId)).toHaveLength(4);
  });

  it("lists an email's invitations that have not expired, and an organization's pending ones newest first", async () => {
    const { orgId, invite } = await setup();
    const older = invite('a@example.test');
    const newer = invite('b@example.test', later(1000), 'owner');
    await t.repos.invitations.create(older, null);
    await t.repos.invitations.create(newer, null);
    expect((await t.repos.invitations.listPending(orgId)).map((i) => i.email)).toEqual([
      'b@example.test',
      'a@example.test',
    ]);
    expect(await t.repos.invitations.listForEmail('A@example.TEST', later(1))).toEqual([
      expect.objectContaining({ id: older.id, orgName: 'acme', role: 'member' }),
    ]);
    expect(await t.repos.invitations.listForEmail('a@example.test', older.expiresAt)).toEqual([]);
    expect(await t.repos.invitations.listForEmail('nobody@example.test', AT)).toEqual([]);
  });

  it('accepts once, adding the membership with its role; not once expired, declined or revoked', async () => {
    const { orgId, invite } = await setup();
    const dev = newId();
    await t.repos.users.insert({ id: dev, email: 'dev@example.test', passwordHash: 'h', createdAt: AT });
    const invitation = invite('dev@example.test', AT, 'owner');
    await t.repos.invitations.create(invitation, null);
    const outcomes = await Promise.all([
      t.repos.invitations.accept(invitation.id, dev, later(5)),
      t.other.invitations.accept(invitation.id, dev, later(5)),
    ]);
    expect(outcomes.sort()).toEqual(['not_pending', 'ok']);
    expect(await t.repos.orgs.findMember(orgId, dev)).toMatchObject({ role: 'owner', joinedAt: later(5) });
    expect(await t.repos.invitations.findById(invitation.id)).toMatchObject({
      status: 'accepted',
      endedAt: later(5),
    });
    expect(await t.repos.invitations.end(invitation.id, 'revoked', later(6))).toBe(false);

    const late = invite('late@example.test');
    await t.repos.invitations.create(late, null);
    expect(await t.repos.invitations.accept(late.id, dev, late.expiresAt)).toBe('not_pending');
    expect(await t.repos.invitations.findById(late.id)).toMatchObject({ status: 'pending' });
    // An expired invitation can still be revoked (the owner's list is tidied).
    expect(await t.repos.invitations.end(late.id, 'revoked', later(WEEK + 1))).toBe(true);
    expect(await t.repos.invitations.findById(late.id)).toMatchObject({ status: 'revoked', endedAt: later(WEEK + 1) });

    const declined = invite('declined@example.test');
    await t.repos.invitations.create(declined, null);
    expect(await t.repos.invitations.end(declined.id, 'declined', later(1))).toBe(true);
    expect(await t.repos.invitations.end(declined.id, 'declined', later(2))).toBe(false);
    expect(await t.repos.invitations.accept(declined.id, dev, later(3))).toBe('not_pending');
    expect(await t.repos.invitations.listPending(orgId)).toEqual([]);
  });

  it('accepts for someone who became a member meanwhile, keeping their role', async () => {
    const { orgId, invite } = await setup();
    const dev = newId();
    await t.repos.users.insert({ id: dev, email: 'dev@example.test', passwordHash: 'h', createdAt: AT });
    const invitation = invite('dev@example.test', AT, 'owner');
    await t.repos.invitations.create(invitation, null);
    await t.repos.orgs.addMember(orgId, dev, 'member', later(1));
    expect(await t.repos.invitations.accept(invitation.id, dev, later(2))).toBe('already_member');
    expect(await t.repos.orgs.findMember(orgId, dev)).toMatchObject({ role: 'member' });
    expect(await t.repos.invitations.findById(invitation.id)).toMatchObject({ status: 'accepted' });
  });

  it('revokes the pending invitations of an owner who is demoted or removed, and refuses their new ones', async () => {
    const { owner, orgId, invite } = await setup();
    const [alice, bob] = [newId(), newId()];
    await t.repos.users.insert({ id: alice, email: 'alice@example.test', passwordHash: 'h', createdAt: AT });
    await t.repos.users.insert({ id: bob, email: 'bob@example.test', passwordHash: 'h', createdAt: AT });
    await t.repos.orgs.addMember(orgId, alice, 'owner', AT);
    await t.repos.orgs.addMember(orgId, bob, 'owner', AT);
    const by = (createdBy: string, email: string, role: 'owner' | 'member' = 'owner') => ({
      ...invite(email, AT, role),
      createdBy,
    });
    const [fromAlice, fromBob, fromOwner] = [
      by(alice, 'mallory@example.test'),
      by(bob, 'eve@example.test', 'member'),
      by(owner, 'dev@example.test'),
    ];
    for (const invitation of [fromAlice, fromBob, fromOwner]) {
      expect(await t.repos.invitations.create(invitation, null)).toBe('ok');
    }
    const mallory = newId();
    await t.repos.users.insert({ id: mallory, email: 'mallory@example.test', passwordHash: 'h', createdAt: AT });

    // Removed from another coordinator: alice's invitation ends with her membership.
    expect(await t.other.orgs.removeMember(orgId, alice, later(1))).toEqual({
      revokedInvitations: [
        { id: fromAlice.id, email: 'mallory@example.test', role: 'owner', expiresAt: fromAlice.expiresAt },
      ],
      revokedEnrollmentTokens: [],
    });
    expect(await t.repos.invitations.accept(fromAlice.id, mallory, later(2))).toBe('not_pending');
    expect(await t.repos.orgs.roleOf(orgId, mallory)).toBeNull();
    expect(await t.repos.invitations.findById(fromAlice.id)).toMatchObject({ status: 'revoked', endedAt: later(1) });

    // Demoted: bob's goes too; an owner staying an owner keeps theirs.
    expect(await t.repos.orgs.setRole(orgId, bob, 'owner', later(3))).toEqual({
      revokedInvitations: [],
      revokedEnrollmentTokens: [],
    });
    expect(await t.repos.orgs.setRole(orgId, bob, 'operator', later(3))).toEqual({
      revokedInvitations: [{ id: fromBob.id, email: 'eve@example.test', role: 'member', expiresAt: fromBob.expiresAt }],
      revokedEnrollmentTokens: [],
    });
    expect((await t.repos.invitations.listPending(orgId)).map((i) => i.id)).toEqual([fromOwner.id]);

    // No longer an owner (or no longer a member): a new invitation of theirs is refused, nothing written.
    expect(await t.repos.invitations.create(by(bob, 'later@example.test'), null)).toBe('inviter_not_owner');
    expect(await t.repos.invitations.create(by(alice, 'later@example.test'), null)).toBe('inviter_not_owner');
    expect((await t.repos.invitations.listPending(orgId)).map((i) => i.id)).toEqual([fromOwner.id]);
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
    expect(await t.other.serverSecrets.get('k')).toBe(values[0]);
    expect(await t.repos.serverSecrets.get('absent')).toBeNull();
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

  it('uses a single sign-on state once, before it expires, whichever coordinator asks; forgets expired ones', async () => {
    const state = {
      stateHash: 'a'.repeat(64),
      browserHash: 'b'.repeat(64),
      nonce: 'n',
      codeVerifier: 'v',
      nextPath: '/orgs',
      createdAt: AT,
      expiresAt: later(600_000),
    };
    expect(await t.repos.oidcStates.add(state, 10)).toBe(true);
    const both = await Promise.all([
      t.repos.oidcStates.consume(state.stateHash, later(1)),
      t.other.oidcStates.consume(state.stateHash, later(1)),
    ]);
    expect(both.filter(Boolean)).toEqual([state]);
    await t.repos.oidcStates.add({ ...state, stateHash: 'c'.repeat(64) }, 10);
    expect(await t.repos.oidcStates.consume('c'.repeat(64), later(600_000))).toBeNull();
    await t.repos.oidcStates.add({ ...state, stateHash: 'd'.repeat(64), createdAt: later(700_000) }, 10);
    const left = await t.rows<{ state_hash: string }>('SELECT state_hash FROM oidc_states');
    expect(left.map((r) => r.state_hash)).toEqual(['d'.repeat(64)]);
  });

  it('stores no more single sign-on states than the cap, used ones counted, until some expire', async () => {
    const state = (hash: string, createdAt = AT) => ({
      stateHash: hash.repeat(64),
      browserHash: 'b'.repeat(64),
      nonce: 'n',
      codeVerifier: 'v',
      nextPath: '/orgs',
      createdAt,
      expiresAt: later(600_000),
    });
    expect(await t.repos.oidcStates.add(state('a'), 2)).toBe(true);
    expect(await t.repos.oidcStates.add(state('b'), 2)).toBe(true);
    expect(await t.repos.oidcStates.consume('a'.repeat(64), later(1))).not.toBeNull();
    expect(await t.repos.oidcStates.add(state('c'), 2)).toBe(false);
    expect(await t.rows('SELECT state_hash FROM oidc_states')).toHaveLength(2);
    // Past their expiry the two are forgotten, and a new one fits.
    expect(await t.repos.oidcStates.add(state('d', later(600_001)), 2)).toBe(true);
    const left = await t.rows<{ state_hash: string }>('SELECT state_hash FROM oidc_states');
    expect(left.map((r) => r.state_hash)).toEqual(['d'.repeat(64)]);
  });

  it('stores no more command-line sign-ins than the cap from every address together, until some expire', async () => {
    const limits = { perAddress: 2, total: 3 };
    const approver = newId();
    await t.repos.users.insert({ id: approver, email: 'approver@example.test', passwordHash: 'h', createdAt: AT });
    const signIn = (n: number, clientKey: string, createdAt = AT) => ({
      deviceCodeHash: String(n).padStart(64, '0'),
      userCode: `CODE-${String(n).padStart(4, '0')}`,
      client: null,
      requestedFrom: clientKey,
      clientKey,
      createdAt,
      expiresAt: new Date(Date.parse(createdAt) + 600_000).toISOString(),
    });
    // Each address within its own limit, yet past the cap together; an approved one counts too.
    expect(await t.repos.deviceSignIns.start(signIn(1, 'a'), limits)).toBe('started');
    expect(await t.other.deviceSignIns.start(signIn(2, 'b'), limits)).toBe('started');
    expect(
      await t.repos.deviceSignIns.decide('CODE-0001', {
        status: 'approved',
        userId: approver,
        sessionGeneration: 0,
        at: AT,
      }),
    ).not.toBeNull();
    expect(await t.repos.deviceSignIns.start(signIn(3, 'c'), limits)).toBe('started');
    expect(await t.other.deviceSignIns.start(signIn(4, 'd'), limits)).toBe('full');
    // An address past its own limit hears so first.
    expect(await t.repos.deviceSignIns.start(signIn(5, 'c'), { ...limits, perAddress: 1 })).toBe('limited');
    expect((await t.rows('SELECT 1 FROM device_sign_ins')).length).toBe(3);
    // Once they expire, there is room again.
    expect(await t.repos.deviceSignIns.start(signIn(6, 'e', later(600_001)), limits)).toBe('started');
    expect((await t.rows('SELECT 1 FROM device_sign_ins')).length).toBe(1);
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
    expect(await t.repos.apiTokens.revoke(owner.orgId, first.id, later(5))).toEqual({
      token: { ...first, revokedAt: later(5) },
      first: true,
    });
    expect(await t.repos.apiTokens.revoke(owner.orgId, first.id, later(9))).toEqual({
      token: { ...first, revokedAt: later(5) },
      first: false,
    });
    expect(await t.repos.apiTokens.revoke(newId(), first.id, later(9))).toBeNull();
    expect(await t.repos.apiTokens.findInOrg(newId(), first.id)).toBeNull();
  });

  it('revokes a token first for one of two revocations at once from two coordinators', async () => {
    const owner = await setup();
    for (let round = 0; round < 5; round++) {
      const x = token(owner);
      await t.repos.apiTokens.insert(x, `race${round}`);
      const outcomes = await Promise.all([
        t.repos.apiTokens.revoke(owner.orgId, x.id, later(1)),
        t.other.apiTokens.revoke(owner.orgId, x.id, later(2)),
      ]);
      expect(outcomes.map((o) => o?.first).sort()).toEqual([false, true]);
      const revokedAt = outcomes.find((o) => o?.first)!.token.revokedAt;
      expect(outcomes.map((o) => o?.token.revokedAt)).toEqual([revokedAt, revokedAt]);
    }
  });

  it('answers a null issuer role once the issuer left the organization', async () => {
    const owner = await setup();
    const userId = newId();
    await t.repos.users.insert({ id: userId, email: 'm@example.test', passwordHash: 'x', createdAt: AT });
    await t.repos.orgs.addMember(owner.orgId, userId, 'member', AT);
    await t.repos.apiTokens.insert(token({ ...owner, userId }), 'h');
    expect((await t.repos.apiTokens.findForAuthentication('h'))?.issuerRole).toBe('member');
    await t.repos.orgs.removeMember(owner.orgId, userId, AT);
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
    expect(await t.repos.storageBindings.softDeleteIfEmpty(orgId, s3.id, later(1))).toEqual({ outcome: 'deleted' });
    expect(await t.repos.storageBindings.softDeleteIfEmpty(orgId, s3.id, later(2))).toEqual({ outcome: 'not_found' });
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
      targetType: 'trigger' as const,
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

  it('stores a batch whole or not at all, and a single entry alone', async () => {
    const entry = (i: number, actorType = 'system') => ({
      orgId: 'org-1',
      actorType: actorType as 'system',
      actorId: null,
      action: 'org.create' as const,
      metadata: { i },
      createdAt: later(i),
    });
    await expect(t.repos.audit.insertMany([entry(0), entry(1, 'robot')])).rejects.toThrow();
    expect(await t.repos.audit.list('org-1', { limit: 10 })).toEqual([]);
    await t.repos.audit.insertMany([entry(2)]);
    expect((await t.repos.audit.list('org-1', { limit: 10 })).map((e) => [e.metadata.i, e.targetId])).toEqual([
      [2, null],
    ]);
    const metadata = { i: 3, name: 'é "q" \\ ✓', nested: { list: [1.5, null, true] } };
    await t.repos.audit.insertMany([
      { ...entry(3), metadata },
      { ...entry(4), targetType: 'org', targetId: 'org-1' },
    ]);
    const [fourth, third] = await t.repos.audit.list('org-1', { limit: 2 });
    expect(third).toMatchObject({ metadata, createdAt: later(3), targetType: null, actorId: null });
    expect(fourth).toMatchObject({ metadata: { i: 4 }, createdAt: later(4), targetType: 'org', targetId: 'org-1' });
  });
});

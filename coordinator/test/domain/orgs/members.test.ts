import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase, type Db } from '../../../src/db/database.js';
import { migrate } from '../../../src/db/migrate.js';
import { createSqliteRepositories } from '../../../src/sqlite-repositories.js';
import type { Repositories } from '../../../src/domain/model/repositories.js';
import { createOrganization } from '../../../src/domain/orgs/bootstrap.js';
import { endedRefusal, INVITATION_TTL_MS, invite, isFor, presented } from '../../../src/domain/orgs/invitations.js';
import type { Invitation } from '../../../src/domain/model/invitations.js';
import { changeMemberRole, removeMember } from '../../../src/domain/orgs/members.js';
import { verifyPassword } from '../../../src/domain/auth/passwords.js';

const AT = '2026-01-01T00:00:00.000Z';
const NOW = Date.parse(AT);

describe('members and invitations', () => {
  let db: Db;
  let repos: Repositories;
  let orgId: string;
  const ownerId = '11111111-1111-4111-8111-111111111111';

  beforeEach(async () => {
    db = openDatabase(':memory:');
    migrate(db);
    repos = createSqliteRepositories(db);
    await repos.users.insert({ id: ownerId, email: 'owner@example.test', passwordHash: 'x', createdAt: AT });
    orgId = await createOrganization(repos, 'acme', ownerId, AT);
  });
  afterEach(() => db.close());

  /** Accepts the invitation as the user of its email (the repository's step; the service adds the checks). */
  const join = async (invitationId: string, email: string) => {
    const user = await repos.users.findByEmail(email);
    expect(await repos.invitations.accept(invitationId, user!.id, AT)).toBe('ok');
    return user!.id;
  };

  it('invites a new email: its account is created with the first password, and it is not a member yet', async () => {
    const invitation = await invite(
      repos,
      orgId,
      ownerId,
      { email: ' A@Example.test ', password: 'password1', role: 'member' },
      NOW,
    );
    expect(invitation).toMatchObject({
      email: 'A@Example.test',
      role: 'member',
      status: 'pending',
      orgName: 'acme',
      invitedBy: { userId: ownerId, email: 'owner@example.test' },
      createdAt: AT,
      expiresAt: new Date(NOW + INVITATION_TTL_MS).toISOString(),
    });
    const user = await repos.users.findByEmail('a@example.test');
    expect(await verifyPassword('password1', user!.passwordHash)).toBe(true);
    expect(await repos.orgs.roleOf(orgId, user!.id)).toBeNull();
  });

  it("answers an existing account and a new email alike, and never sets an existing account's password", async () => {
    await repos.users.insert({
      id: '22222222-2222-4222-8222-222222222222',
      email: 'b@example.test',
      passwordHash: 'theirs',
      createdAt: AT,
    });
    const existing = await invite(
      repos,
      orgId,
      ownerId,
      { email: 'b@example.test', password: 'password2', role: 'member' },
      NOW,
    );
    const fresh = await invite(
      repos,
      orgId,
      ownerId,
      { email: 'c@example.test', password: 'password2', role: 'member' },
      NOW,
    );
    const shape = (i: object) => Object.fromEntries(Object.entries(i).map(([k, v]) => [k, typeof v]));
    expect(shape(existing)).toEqual(shape(fresh));
    expect({ ...existing, id: '', email: '' }).toEqual({ ...fresh, id: '', email: '' });
    expect((await repos.users.findByEmail('b@example.test'))!.passwordHash).toBe('theirs');
    // The same refusals for both: a short password, a bad email.
    for (const email of ['b@example.test', 'd@example.test']) {
      await expect(
        invite(repos, orgId, ownerId, { email, password: '1234567', role: 'member' }, NOW),
      ).rejects.toMatchObject({
        statusCode: 422,
        details: [{ path: 'body.password', message: 'must be 8 to 1024 characters, got 7' }],
      });
    }
    await expect(invite(repos, orgId, ownerId, { email: 'no at sign', role: 'member' }, NOW)).rejects.toMatchObject({
      details: [{ path: 'body.email', message: 'must be an email address, got `no at sign` (string)' }],
    });
  });

  it('refuses a member of the organization and a second pending invitation (409), and replaces an expired one', async () => {
    await expect(
      invite(repos, orgId, ownerId, { email: 'OWNER@example.test', role: 'member' }, NOW),
    ).rejects.toMatchObject({
      statusCode: 409,
      message: 'This email belongs to a member of the organization already',
    });
    const first = await invite(repos, orgId, ownerId, { email: 'e@example.test', role: 'member' }, NOW);
    await expect(
      invite(repos, orgId, ownerId, { email: 'E@example.test', role: 'owner' }, NOW + 1),
    ).rejects.toMatchObject({
      statusCode: 409,
      message: 'This email has a pending invitation to the organization already; revoke it to invite again',
    });
    const later = NOW + INVITATION_TTL_MS;
    const second = await invite(repos, orgId, ownerId, { email: 'e@example.test', role: 'owner' }, later);
    expect(second.role).toBe('owner');
    expect((await repos.invitations.findById(first.id))!.status).toBe('expired');
  });

  it('says why an invitation can no longer be answered: 409 accepted, 410 revoked, declined or expired', async () => {
    const invitation = await invite(
      repos,
      orgId,
      ownerId,
      { email: 'f@example.test', password: 'password1', role: 'member' },
      NOW,
    );
    expect(endedRefusal(invitation, NOW)).toBeNull();
    expect(presented(invitation, NOW).status).toBe('pending');
    const expiry = Date.parse(invitation.expiresAt);
    expect(presented(invitation, expiry).status).toBe('expired');
    expect(endedRefusal(invitation, expiry)).toMatchObject({
      statusCode: 410,
      code: 'invitation_expired',
      message: `This invitation expired at ${invitation.expiresAt}; an owner of the organization can invite again`,
    });
    const cases = [
      ['accepted', 409, 'conflict', 'This invitation was accepted already'],
      ['revoked', 410, 'invitation_revoked', 'This invitation was revoked by an owner of the organization'],
      ['declined', 410, 'invitation_revoked', 'This invitation was declined by its invitee'],
    ] as const;
    for (const [status, statusCode, code, message] of cases) {
      // An ended invitation is refused whatever the time: the status wins over the expiry.
      expect(endedRefusal({ ...invitation, status }, expiry)).toMatchObject({ statusCode, code, message });
    }
  });

  it('protects the last owner from demotion and removal', async () => {
    await expect(changeMemberRole(repos, orgId, ownerId, 'member', AT)).rejects.toMatchObject({ statusCode: 409 });
    await expect(removeMember(repos, orgId, ownerId, AT)).rejects.toMatchObject({ statusCode: 409 });
    const invitation = await invite(
      repos,
      orgId,
      ownerId,
      { email: 'd@example.test', password: 'password1', role: 'owner' },
      NOW,
    );
    const second = await join(invitation.id, 'd@example.test');
    const changed = await changeMemberRole(repos, orgId, ownerId, 'member', AT);
    expect(changed).toMatchObject({ previousRole: 'owner', member: { role: 'member' } });
    await expect(removeMember(repos, orgId, second, AT)).rejects.toMatchObject({ statusCode: 409 });
    expect((await removeMember(repos, orgId, ownerId, AT)).member.userId).toBe(ownerId);
    expect(await repos.orgs.listMembers(orgId)).toHaveLength(1);
  });

  it('answers 404 for someone who is not a member', async () => {
    await expect(
      changeMemberRole(repos, orgId, '22222222-2222-4222-8222-222222222222', 'owner', AT),
    ).rejects.toMatchObject({
      statusCode: 404,
    });
    await expect(removeMember(repos, orgId, '22222222-2222-4222-8222-222222222222', AT)).rejects.toMatchObject({
      statusCode: 404,
    });
  });
});

describe('an invitation is for', () => {
  it('its email in any case of its ASCII letters, and not for a look-alike the database holds apart', () => {
    const invitation = { email: 'Kim@Example.test' } as Invitation;
    expect(isFor(invitation, 'kim@example.TEST')).toBe(true);
    // The Kelvin sign folds to k in Unicode, not in the database: it is another account.
    expect(isFor(invitation, '\u212Aim@example.test')).toBe(false);
    expect(isFor(invitation, 'kim@example.test.')).toBe(false);
  });
});

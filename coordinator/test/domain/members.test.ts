import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase, type Db } from '../../src/db/database.js';
import { migrate } from '../../src/db/migrate.js';
import { createSqliteRepositories } from '../../src/sqlite-repositories.js';
import type { Repositories } from '../../src/domain/model/repositories.js';
import { createOrganization } from '../../src/domain/bootstrap.js';
import { addMember, changeMemberRole, removeMember } from '../../src/domain/members.js';
import { verifyPassword } from '../../src/domain/passwords.js';

const AT = '2026-01-01T00:00:00.000Z';

describe('members', () => {
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

  it('creates a new user with a scrypt hash of the password', async () => {
    const { member, createdUser } = await addMember(
      repos,
      orgId,
      { email: ' A@Example.test ', password: 'password1', role: 'member' },
      AT,
    );
    expect(createdUser).toBe(true);
    expect(member).toMatchObject({ email: 'A@Example.test', role: 'member', joinedAt: AT });
    const user = await repos.users.findByEmail('a@example.test');
    expect(await verifyPassword('password1', user!.passwordHash)).toBe(true);
  });

  it('adds an existing user without a password, refusing a password or a second membership', async () => {
    const other = await createOrganization(repos, 'other', ownerId, AT);
    await addMember(repos, other, { email: 'b@example.test', password: 'password1', role: 'member' }, AT);
    await expect(
      addMember(repos, orgId, { email: 'b@example.test', password: 'password2', role: 'member' }, AT),
    ).rejects.toMatchObject({
      statusCode: 409,
    });
    const { createdUser } = await addMember(repos, orgId, { email: 'b@example.test', role: 'owner' }, AT);
    expect(createdUser).toBe(false);
    await expect(addMember(repos, orgId, { email: 'b@example.test', role: 'member' }, AT)).rejects.toMatchObject({
      statusCode: 409,
    });
    const user = await repos.users.findByEmail('b@example.test');
    expect(await verifyPassword('password1', user!.passwordHash)).toBe(true);
  });

  it('needs a password of 8 characters or more for a new user', async () => {
    await expect(addMember(repos, orgId, { email: 'c@example.test', role: 'member' }, AT)).rejects.toMatchObject({
      statusCode: 422,
    });
    await expect(
      addMember(repos, orgId, { email: 'c@example.test', password: '1234567', role: 'member' }, AT),
    ).rejects.toMatchObject({
      statusCode: 422,
    });
    expect(await repos.users.findByEmail('c@example.test')).toBeNull();
  });

  it('protects the last owner from demotion and removal', async () => {
    await expect(changeMemberRole(repos, orgId, ownerId, 'member')).rejects.toMatchObject({ statusCode: 409 });
    await expect(removeMember(repos, orgId, ownerId)).rejects.toMatchObject({ statusCode: 409 });
    const { member } = await addMember(
      repos,
      orgId,
      { email: 'd@example.test', password: 'password1', role: 'owner' },
      AT,
    );
    const changed = await changeMemberRole(repos, orgId, ownerId, 'member');
    expect(changed).toMatchObject({ previousRole: 'owner', member: { role: 'member' } });
    await expect(removeMember(repos, orgId, member.userId)).rejects.toMatchObject({ statusCode: 409 });
    expect((await removeMember(repos, orgId, ownerId)).userId).toBe(ownerId);
    expect(await repos.orgs.listMembers(orgId)).toHaveLength(1);
  });

  it('answers 404 for someone who is not a member', async () => {
    await expect(changeMemberRole(repos, orgId, '22222222-2222-4222-8222-222222222222', 'owner')).rejects.toMatchObject(
      {
        statusCode: 404,
      },
    );
    await expect(removeMember(repos, orgId, '22222222-2222-4222-8222-222222222222')).rejects.toMatchObject({
      statusCode: 404,
    });
  });
});

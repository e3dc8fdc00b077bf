import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OWNER_EMAIL, OWNER_PASSWORD, startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import { addUser, fakeClock, MEMBER_PASSWORD } from '../helpers/members.js';

/** What an organization keeps unless its owner changes it (docs/operations.md, "Retention"). */
const DEFAULT_RETENTION = { jobsDays: 90, failedJobsDays: 180, auditDays: 365, occurrencesDays: 30 };

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
    expect(got.body).toEqual({ ...res.body, retention: DEFAULT_RETENTION });
    const bindings = await t.owner.get(`/orgs/${res.body.id}/storage-bindings`);
    expect(bindings.body).toEqual([
      { id: expect.any(String), name: 'local', backend: 'local', isDefault: true, createdAt: expect.any(String) },
    ]);
    const audit = await t.owner.get(`/orgs/${res.body.id}/audit`, {});
    expect(audit.body.map((e: { action: string }) => e.action)).toContain('org.create');
    const orgs = await t.owner.get('/orgs');
    expect(orgs.body.map((o: { name: string }) => o.name)).toEqual(['acme', 'Second org']);
  });

  it("lets an owner change the organization's retention; a member reads it but may not change it", async () => {
    const { client: member } = await addUser(t.owner, t.orgId, 'retention.member@example.test');
    const changed = await t.owner.patch(`/orgs/${t.orgId}`, { body: { retention: { jobsDays: 30, auditDays: 730 } } });
    expect(changed.status).toBe(200);
    expect(changed.body).toMatchObject({
      id: t.orgId,
      retention: { ...DEFAULT_RETENTION, jobsDays: 30, auditDays: 730 },
    });
    // The same values again change nothing, and leave no second entry in the audit log.
    const again = await t.owner.patch(`/orgs/${t.orgId}`, { body: { retention: { auditDays: 730 } } });
    expect(again.body.retention).toEqual(changed.body.retention);
    const audited = await t.owner.get<unknown[]>(`/orgs/${t.orgId}/audit?action=org.retention.update`);
    expect(audited.body).toHaveLength(1);

    const refused = await member.patch(`/orgs/${t.orgId}`, { body: { retention: { jobsDays: 1 } } });
    expect(refused.status).toBe(403);
    const view = await member.get(`/orgs/${t.orgId}/retention`);
    expect(view.status).toBe(200);
    expect(view.body).toMatchObject({
      retention: { ...DEFAULT_RETENTION, jobsDays: 30, auditDays: 730 },
      overrides: { jobsDays: 30, failedJobsDays: null, auditDays: 730, occurrencesDays: null },
      defaults: DEFAULT_RETENTION,
      database: { engine: t.coordinator.database, bytes: expect.any(Number) },
    });

    for (const [retention, path] of [
      [{ jobsDays: 0 }, 'body.retention.jobsDays'],
      [{ failedJobsDays: -5 }, 'body.retention.failedJobsDays'],
      [{ auditDays: 2.5 }, 'body.retention.auditDays'],
      [{ occurrencesDays: 1e9 }, 'body.retention.occurrencesDays'],
      [{ occurrencesDays: '30' }, 'body.retention.occurrencesDays'],
      [{ forever: true }, 'body.retention'],
    ] as const) {
      const res = await t.owner.patch(`/orgs/${t.orgId}`, { body: { retention } });
      expect(res.status, JSON.stringify(retention)).toBe(422);
      expect(res.body.details[0].path, JSON.stringify(retention)).toContain(path);
    }
    expect((await t.owner.patch(`/orgs/${t.orgId}`, { body: {} })).status).toBe(422);
    const reset = await t.owner.patch(`/orgs/${t.orgId}`, { body: { retention: { jobsDays: null, auditDays: null } } });
    expect(reset.body.retention).toEqual(DEFAULT_RETENTION);
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
  const clock = fakeClock();
  let t: TestCoordinator;
  let ownerId: string;
  beforeAll(async () => {
    t = await startTestCoordinator({ clock });
    const members = await t.owner.get(`/orgs/${t.orgId}/members`);
    ownerId = members.body[0].userId;
  });
  afterAll(() => t?.close());

  const invite = (body: unknown, orgId = t.orgId) => t.owner.post(`/orgs/${orgId}/members`, { body });
  const memberEmails = async (orgId = t.orgId) =>
    (await t.owner.get<{ email: string }[]>(`/orgs/${orgId}/members`)).body.map((m) => m.email);

  it('lists the owner as the only member at first', async () => {
    const res = await t.owner.get(`/orgs/${t.orgId}/members`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual([
      { userId: ownerId, email: OWNER_EMAIL, role: 'owner', joinedAt: expect.any(String), ssoGroup: null },
    ]);
  });

  it('invites a new email with a first password: the invitee signs in with it, accepts, and is a member', async () => {
    const res = await invite({ email: ' new.user@example.test ', password: MEMBER_PASSWORD, role: 'member' });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.any(String),
      orgId: t.orgId,
      orgName: 'acme',
      email: 'new.user@example.test',
      role: 'member',
      status: 'pending',
      invitedBy: { userId: ownerId, email: OWNER_EMAIL },
      createdAt: new Date(clock.now()).toISOString(),
      expiresAt: new Date(clock.now() + 7 * 24 * 3600_000).toISOString(),
      endedAt: null,
    });
    expect(res.body).not.toHaveProperty('password');
    expect(await memberEmails()).toEqual([OWNER_EMAIL]); // not a member before accepting

    const client = await t.api.login('new.user@example.test', MEMBER_PASSWORD);
    expect((await client.get('/orgs')).body).toEqual([]);
    expect((await client.get('/invitations')).body).toEqual([res.body]);
    const accepted = await client.post(`/invitations/${res.body.id}/accept`);
    expect(accepted.status).toBe(200);
    expect(accepted.body).toEqual({ id: t.orgId, name: 'acme', role: 'member', createdAt: expect.any(String) });
    expect((await client.get(`/orgs/${t.orgId}`)).body.role).toBe('member');
    expect((await client.get('/invitations')).body).toEqual([]);
    expect((await memberEmails()).sort()).toEqual(['new.user@example.test', OWNER_EMAIL]);
    // The password at rest (a hash, never the password) is not in the API.
    const stored = await t.sql.get<{ password_hash: string }>(
      'SELECT password_hash FROM users WHERE email = ?',
      'new.user@example.test',
    );
    expect(stored!.password_hash.startsWith('scrypt$')).toBe(true);
    expect(stored!.password_hash).not.toContain(MEMBER_PASSWORD);
  });

  it('adds no existing account without its consent, and answers it as a new email: nothing tells them apart', async () => {
    const other = await t.owner.post('/orgs', { body: { name: 'elsewhere' } });
    const { client: existing } = await addUser(t.owner, other.body.id, 'existing@example.test');
    // Another signed-in user owns an organization of their own, and invites an existing and a new email.
    const stranger = await addUser(t.owner, other.body.id, 'stranger@example.test');
    const own = await stranger.client.post('/orgs', { body: { name: 'probe' } });
    const path = `/orgs/${own.body.id}/members`;
    const answers = [];
    for (const email of ['EXISTING@example.test', 'nobody.yet@example.test']) {
      for (const body of [
        { email, role: 'member' },
        { email, password: 'a password of mine', role: 'owner' },
      ]) {
        const res = await stranger.client.post(path, { body });
        answers.push(res);
        if (res.status === 201) await stranger.client.delete(`/orgs/${own.body.id}/invitations/${res.body.id}`);
      }
    }
    expect(answers.map((a) => a.status)).toEqual([201, 201, 201, 201]);
    const shape = (body: Record<string, unknown>) =>
      Object.fromEntries(Object.entries(body).map(([k, v]) => [k, v === null ? 'null' : typeof v]));
    for (const answer of answers) {
      expect([...answer.headers.keys()].sort()).toEqual([...answers[0]!.headers.keys()].sort());
      expect(shape(answer.body)).toEqual(shape(answers[0]!.body));
      expect(answer.body.status).toBe('pending');
    }
    // The existing account is not a member of the stranger's organization, and its password is its own.
    expect((await existing.get('/orgs')).body.map((o: { name: string }) => o.name)).toEqual(['elsewhere']);
    expect((await stranger.client.get(`${path}`)).body.map((m: { email: string }) => m.email)).toEqual([
      'stranger@example.test',
    ]);
    await expect(t.api.login('existing@example.test', 'a password of mine')).rejects.toThrow(/401/);
    await t.api.login('existing@example.test', MEMBER_PASSWORD);
  });

  it('lets the invitee decline: the invitation can no longer be accepted (410)', async () => {
    const { client } = await addUser(
      t.owner,
      (await t.owner.post('/orgs', { body: { name: 'd' } })).body.id,
      'decliner@example.test',
    );
    const res = await invite({ email: 'decliner@example.test', role: 'owner' });
    const pending = await client.get('/invitations');
    expect(pending.body).toEqual([expect.objectContaining({ id: res.body.id, orgName: 'acme', role: 'owner' })]);
    const declined = await client.post(`/invitations/${res.body.id}/decline`);
    expect(declined.status).toBe(200);
    expect(declined.body).toMatchObject({ id: res.body.id, status: 'declined', endedAt: expect.any(String) });
    const late = await client.post(`/invitations/${res.body.id}/accept`);
    expect(late.status).toBe(410);
    expect(late.body).toMatchObject({
      code: 'invitation_revoked',
      message: 'This invitation was declined by its invitee',
    });
    expect((await client.get(`/orgs/${t.orgId}`)).status).toBe(404);
    expect((await t.owner.get(`/orgs/${t.orgId}/invitations`)).body.map((i: { id: string }) => i.id)).not.toContain(
      res.body.id,
    );
  });

  it('lists and revokes pending invitations (owner); answers accepted, revoked and foreign invitations clearly', async () => {
    const { client: bob } = await addUser(
      t.owner,
      (await t.owner.post('/orgs', { body: { name: 'b' } })).body.id,
      'bob@example.test',
    );
    const revoked = await invite({ email: 'bob@example.test', role: 'member' });
    const list = await t.owner.get(`/orgs/${t.orgId}/invitations`);
    expect(list.status).toBe(200);
    expect(list.body).toEqual([revoked.body]);
    // Someone else's invitation is not found, to accept or to decline.
    const carol = await t.api.login('new.user@example.test', MEMBER_PASSWORD);
    for (const action of ['accept', 'decline']) {
      const res = await carol.post(`/invitations/${revoked.body.id}/${action}`);
      expect(res.status).toBe(404);
      expect(res.body).toMatchObject({ code: 'not_found', message: 'Invitation not found' });
    }
    const gone = await t.owner.delete(`/orgs/${t.orgId}/invitations/${revoked.body.id}`);
    expect(gone.status).toBe(200);
    expect(gone.body).toMatchObject({ id: revoked.body.id, status: 'revoked', endedAt: expect.any(String) });
    expect((await t.owner.get(`/orgs/${t.orgId}/invitations`)).body).toEqual([]);
    expect((await bob.get('/invitations')).body).toEqual([]);
    const late = await bob.post(`/invitations/${revoked.body.id}/accept`);
    expect(late.status).toBe(410);
    expect(late.body).toMatchObject({
      code: 'invitation_revoked',
      message: 'This invitation was revoked by an owner of the organization',
    });
    expect((await t.owner.delete(`/orgs/${t.orgId}/invitations/${revoked.body.id}`)).status).toBe(410);

    // Invited again, accepted, and accepted twice: 409; revoking it now is 409 too.
    const again = await invite({ email: 'bob@example.test', role: 'member' });
    expect(again.status).toBe(201);
    expect((await bob.post(`/invitations/${again.body.id}/accept`)).status).toBe(200);
    const twice = await bob.post(`/invitations/${again.body.id}/accept`);
    expect(twice.status).toBe(409);
    expect(twice.body).toMatchObject({ code: 'conflict', message: 'This invitation was accepted already' });
    expect((await t.owner.delete(`/orgs/${t.orgId}/invitations/${again.body.id}`)).status).toBe(409);
    // An invitation of another organization, and a malformed id, are not found.
    const elsewhere = await t.owner.post('/orgs', { body: { name: 'other' } });
    expect((await t.owner.delete(`/orgs/${elsewhere.body.id}/invitations/${again.body.id}`)).status).toBe(404);
    expect((await bob.post('/invitations/not-a-uuid/accept')).status).toBe(404);
  });

  it('refuses inviting a member or an email already invited (409), whether or not it has an account', async () => {
    const member = await invite({ email: 'NEW.USER@example.test', role: 'member' });
    expect(member.status).toBe(409);
    expect(member.body).toMatchObject({
      code: 'conflict',
      message: 'This email belongs to a member of the organization already',
    });
    for (const email of ['pending.new@example.test', 'existing@example.test']) {
      expect((await invite({ email, role: 'member' })).status).toBe(201);
      const twice = await invite({ email: email.toUpperCase(), password: MEMBER_PASSWORD, role: 'owner' });
      expect(twice.status).toBe(409);
      expect(twice.body.message).toBe(
        'This email has a pending invitation to the organization already; revoke it to invite again',
      );
    }
  });

  it('refuses a short password, a bad email or a bad role with 422', async () => {
    const path = `/orgs/${t.orgId}/members`;
    const cases: [unknown, string][] = [
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
    expect(await t.api.login('short@example.test', 'short').catch(() => null)).toBeNull();
  });

  it('lets a member list members but refuses every owner-only member call with 403', async () => {
    const { userId, client } = await addUser(t.owner, t.orgId, 'plain.member@example.test');
    expect((await client.get(`/orgs/${t.orgId}/members`)).status).toBe(200);
    const pending = (await t.owner.get(`/orgs/${t.orgId}/invitations`)).body[0].id;
    const calls = [
      client.post(`/orgs/${t.orgId}/members`, {
        body: { email: 'y@example.test', password: MEMBER_PASSWORD, role: 'member' },
      }),
      client.get(`/orgs/${t.orgId}/invitations`),
      client.delete(`/orgs/${t.orgId}/invitations/${pending}`),
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
      {
        userId: second,
        email: 'second.owner@example.test',
        role: 'owner',
        joinedAt: expect.any(String),
        ssoGroup: null,
      },
    ]);

    const audit = await secondClient.get(`/orgs/${orgId}/audit`);
    const entries = audit.body as { action: string; actorId: string; metadata: Record<string, unknown> }[];
    // The PATCH that changed nothing recorded nothing.
    expect(entries.map((e) => e.action)).toEqual([
      'member.remove',
      'member.update',
      'member.update',
      'invitation.accept',
      'invitation.create',
      'org.create',
    ]);
    // The invitee accepted; the owner invited; whether the email had an account is not recorded.
    expect(entries[3]).toMatchObject({
      actorId: second,
      metadata: { email: 'second.owner@example.test', role: 'member' },
    });
    expect(Object.keys(entries[4]!.metadata).sort()).toEqual(['email', 'expiresAt', 'role']);
  });

  it("revokes a removed or demoted owner's pending invitations: none makes their invitee a member afterwards", async () => {
    const orgId = (await t.owner.post('/orgs', { body: { name: 'leavers' } })).body.id;
    const { userId: aliceId, client: alice } = await addUser(t.owner, orgId, 'alice.leaver@example.test', 'owner');
    const { userId: bobId, client: bob } = await addUser(t.owner, orgId, 'bob.leaver@example.test', 'owner');
    const sent = async (inviter: typeof alice, email: string) => {
      const res = await inviter.post<{ id: string }>(`/orgs/${orgId}/members`, {
        body: { email, password: MEMBER_PASSWORD, role: 'owner' },
      });
      expect(res.status).toBe(201);
      return res.body.id;
    };
    const fromAlice = await sent(alice, 'alice.second@example.test');
    const fromBob = await sent(bob, 'bob.second@example.test');
    const fromOwner = await sent(t.owner, 'kept@example.test');

    expect((await t.owner.delete(`/orgs/${orgId}/members/${aliceId}`)).status).toBe(200);
    expect((await t.owner.patch(`/orgs/${orgId}/members/${bobId}`, { body: { role: 'member' } })).status).toBe(200);
    const pending = await t.owner.get<{ id: string }[]>(`/orgs/${orgId}/invitations`);
    expect(pending.body.map((i) => i.id)).toEqual([fromOwner]);
    for (const [email, id] of [
      ['alice.second@example.test', fromAlice],
      ['bob.second@example.test', fromBob],
    ] as const) {
      const invitee = await t.api.login(email, MEMBER_PASSWORD);
      expect((await invitee.get('/invitations')).body).toEqual([]);
      const accepted = await invitee.post(`/invitations/${id}/accept`);
      expect(accepted.status).toBe(410);
      expect(accepted.body.code).toBe('invitation_revoked');
      expect((await invitee.get(`/orgs/${orgId}`)).status).toBe(404);
    }
    const audit = await t.owner.get<{ action: string; targetId: string; metadata: Record<string, unknown> }[]>(
      `/orgs/${orgId}/audit?action=invitation.revoke`,
    );
    expect(audit.body.map((e) => [e.targetId, e.metadata.reason]).sort()).toEqual(
      [
        [fromAlice, 'inviter_not_owner'],
        [fromBob, 'inviter_not_owner'],
      ].sort(),
    );
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

  it('makes one invitation and one user when the same new email is invited concurrently', async () => {
    const body = { email: 'race@example.test', password: MEMBER_PASSWORD, role: 'member' };
    const results = await Promise.all([1, 2, 3].map(() => t.owner.post(`/orgs/${t.orgId}/members`, { body })));
    const statuses = results.map((r) => r.status).sort();
    expect(statuses).toEqual([201, 409, 409]);
    expect(await t.sql.all('SELECT id FROM users WHERE email = ?', 'race@example.test')).toHaveLength(1);
  });

  // Last: it moves the clock past the sessions' lifetime.
  it('lets an invitation expire after 7 days: 410 to accept, shown as expired, replaced by a new one', async () => {
    const res = await invite({ email: 'slow@example.test', password: MEMBER_PASSWORD, role: 'member' });
    clock.advance(7 * 24 * 3600_000);
    const slow = await t.api.login('slow@example.test', MEMBER_PASSWORD);
    expect((await slow.get('/invitations')).body).toEqual([]);
    const late = await slow.post(`/invitations/${res.body.id}/accept`);
    expect(late.status).toBe(410);
    expect(late.body).toMatchObject({
      code: 'invitation_expired',
      message: `This invitation expired at ${res.body.expiresAt}; an owner of the organization can invite again`,
    });
    const owner = await t.api.login(OWNER_EMAIL, OWNER_PASSWORD);
    const list = await owner.get(`/orgs/${t.orgId}/invitations`);
    expect(list.body.find((i: { id: string }) => i.id === res.body.id)).toMatchObject({ status: 'expired' });
    const again = await owner.post(`/orgs/${t.orgId}/members`, {
      body: { email: 'slow@example.test', role: 'member' },
    });
    expect(again.status).toBe(201);
    expect((await slow.post(`/invitations/${again.body.id}/accept`)).status).toBe(200);
  });
});

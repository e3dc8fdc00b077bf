import { generateEd25519KeyPair } from '@drover/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import { addUser, fakeClock } from '../helpers/members.js';

describe('enrollment tokens', () => {
  let t: TestCoordinator;
  const clock = fakeClock(Date.parse('2030-01-01T00:00:00.000Z'));
  beforeAll(async () => {
    t = await startTestCoordinator({ clock });
  });
  afterAll(() => t?.close());

  const enroll = (enrollmentToken: string) =>
    t.api.post('/agent/enroll', {
      body: {
        enrollmentToken,
        publicKey: generateEd25519KeyPair().publicKey,
        hostname: 'edge-1',
        os: 'linux',
        agentVersion: '1.0.0',
      },
    });

  it('issues a drve_ token valid for one hour by default and stores only its hash', async () => {
    const res = await t.owner.post(`/orgs/${t.orgId}/enrollment-tokens`, { body: { name: 'rack 4' } });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.any(String),
      name: 'rack 4',
      token: expect.stringMatching(/^drve_[A-Za-z0-9_-]{43}$/),
      expiresAt: '2030-01-01T01:00:00.000Z',
    });
    // What is stored of the token (its hash, not the token) is not in the API.
    const rows = await t.sql.all('SELECT * FROM enrollment_tokens WHERE id = ?', res.body.id);
    expect(rows).toHaveLength(1);
    expect(JSON.stringify(rows)).not.toContain(res.body.token);
    expect(JSON.stringify(rows)).not.toContain(res.body.token.slice(5));
  });

  it('accepts no body at all, and a lifetime from 60 seconds to 30 days', async () => {
    const none = await t.owner.post(`/orgs/${t.orgId}/enrollment-tokens`);
    expect(none.status).toBe(201);
    expect(none.body.name).toBeNull();
    const min = await t.owner.post(`/orgs/${t.orgId}/enrollment-tokens`, { body: { expiresInSeconds: 60 } });
    expect(min.body.expiresAt).toBe('2030-01-01T00:01:00.000Z');
    const max = await t.owner.post(`/orgs/${t.orgId}/enrollment-tokens`, { body: { expiresInSeconds: 30 * 86400 } });
    expect(max.body.expiresAt).toBe('2030-01-31T00:00:00.000Z');
  });

  it('refuses bad input with 422', async () => {
    for (const body of [
      { expiresInSeconds: 59 },
      { expiresInSeconds: 30 * 86400 + 1 },
      { expiresInSeconds: 90.5 },
      { expiresInSeconds: '3600' },
      { expiresInSeconds: null },
      { name: '' },
      { name: '   ' },
      { name: 'n'.repeat(256) },
      { name: ['a'] },
      { token: 'drve_mine' },
      [],
      'text',
    ]) {
      const res = await t.owner.post(`/orgs/${t.orgId}/enrollment-tokens`, { body });
      expect(res.status, JSON.stringify(body)).toBe(422);
      expect(res.body.code).toBe('validation_failed');
    }
  });

  it('refuses a name with a bidirectional override, which would show it reordered, and keeps the marks', async () => {
    const res = await t.owner.post(`/orgs/${t.orgId}/enrollment-tokens`, { body: { name: 'edge\u202egpj.exe' } });
    expect(res.status).toBe(422);
    expect(res.body.details).toEqual([
      {
        path: 'body.name',
        message:
          'must not contain bidirectional formatting characters (U+202A to U+202E, U+2066 to U+2069), which make a name show in another order than it is written, got U+202E',
      },
    ]);
    const marked = await t.owner.post(`/orgs/${t.orgId}/enrollment-tokens`, {
      body: { name: '\u05e9\u05e8\u05ea 4\u200f' },
    });
    expect(marked.status).toBe(201);
  });

  it('lets a plain member issue one', async () => {
    const { client } = await addUser(t.owner, t.orgId, 'member@example.test');
    expect((await client.post(`/orgs/${t.orgId}/enrollment-tokens`, { body: {} })).status).toBe(201);
  });

  it('can be used once only', async () => {
    const { body } = await t.owner.post(`/orgs/${t.orgId}/enrollment-tokens`, { body: {} });
    const first = await enroll(body.token);
    expect(first.status).toBe(201);
    expect(first.body.orgId).toBe(t.orgId);
    const second = await enroll(body.token);
    expect(second.status).toBe(401);
    expect(second.body.code).toBe('unauthorized');
  });

  it('expires after its lifetime', async () => {
    const { body } = await t.owner.post(`/orgs/${t.orgId}/enrollment-tokens`, { body: { expiresInSeconds: 120 } });
    const alive = await t.owner.post(`/orgs/${t.orgId}/enrollment-tokens`, { body: { expiresInSeconds: 120 } });
    clock.advance(119_000);
    expect((await enroll(alive.body.token)).status).toBe(201);
    clock.advance(1_000);
    expect((await enroll(body.token)).status).toBe(401);
  });

  it('records the issue in the audit log without the token', async () => {
    const { body } = await t.owner.post(`/orgs/${t.orgId}/enrollment-tokens`, { body: { name: 'audited' } });
    const audit = await t.owner.get(`/orgs/${t.orgId}/audit?action=enrollment_token.create&limit=1`);
    expect(audit.body[0]).toMatchObject({
      action: 'enrollment_token.create',
      actorType: 'user',
      targetType: 'enrollment_token',
      targetId: body.id,
      metadata: { name: 'audited', expiresAt: body.expiresAt },
    });
    expect(audit.text).not.toContain(body.token);
  });
});

interface ListedToken {
  id: string;
  name: string | null;
  state: 'open' | 'used' | 'revoked' | 'expired';
  createdBy: string | null;
  createdByEmail: string | null;
  usedByAgentId: string | null;
  revokedAt: string | null;
  revokedBy: string | null;
}

describe('listing and revoking enrollment tokens', () => {
  let t: TestCoordinator;
  const clock = fakeClock(Date.parse('2030-01-01T00:00:00.000Z'));
  beforeAll(async () => {
    t = await startTestCoordinator({ clock });
  });
  afterAll(() => t?.close());

  const path = () => `/orgs/${t.orgId}/enrollment-tokens`;
  const issue = async (client: TestCoordinator['owner'], name: string, expiresInSeconds = 3600) => {
    const res = await client.post<{ id: string; token: string }>(path(), { body: { name, expiresInSeconds } });
    expect(res.status, res.text).toBe(201);
    return res.body;
  };
  const enroll = (enrollmentToken: string) =>
    t.api.post('/agent/enroll', {
      body: {
        enrollmentToken,
        publicKey: generateEd25519KeyPair().publicKey,
        hostname: 'edge-2',
        os: 'linux',
        agentVersion: '1.0.0',
      },
    });

  it('lists every token newest first with where it stands, a state alone on asking, in pages, never a secret', async () => {
    const expired = await issue(t.owner, 'expired', 60);
    clock.advance(60_000);
    const used = await issue(t.owner, 'used');
    const enrolled = await enroll(used.token);
    expect(enrolled.status).toBe(201);
    const revoked = await issue(t.owner, 'revoked');
    expect((await t.owner.delete(`${path()}/${revoked.id}`)).status).toBe(200);
    const open = await issue(t.owner, 'open');

    const all = await t.owner.get<ListedToken[]>(path());
    expect(all.status).toBe(200);
    const session = await t.owner.get<{ user: { id: string; email: string } }>('/auth/session');
    const owner = session.body.user;
    expect(all.body).toEqual([
      {
        id: open.id,
        name: 'open',
        state: 'open',
        createdBy: owner.id,
        createdByEmail: owner.email,
        createdAt: '2030-01-01T00:01:00.000Z',
        expiresAt: '2030-01-01T01:01:00.000Z',
        usedAt: null,
        usedByAgentId: null,
        revokedAt: null,
        revokedBy: null,
      },
      expect.objectContaining({
        id: revoked.id,
        state: 'revoked',
        revokedAt: '2030-01-01T00:01:00.000Z',
        revokedBy: owner.id,
      }),
      expect.objectContaining({
        id: used.id,
        state: 'used',
        usedByAgentId: enrolled.body.agentId,
        usedAt: expect.any(String),
      }),
      expect.objectContaining({ id: expired.id, state: 'expired', usedAt: null, revokedAt: null }),
    ]);
    for (const { token } of [expired, used, revoked, open]) expect(all.text).not.toContain(token.slice(5));
    expect(all.text).not.toContain('hash');

    for (const state of ['open', 'used', 'revoked', 'expired'] as const) {
      const only = await t.owner.get<ListedToken[]>(`${path()}?state=${state}`);
      expect(only.body.map((x) => x.name)).toEqual([state]);
    }
    const first = await t.owner.get<ListedToken[]>(`${path()}?limit=3`);
    expect(first.body.map((x) => x.name)).toEqual(['open', 'revoked', 'used']);
    const cursor = first.headers.get('x-next-cursor');
    expect(cursor).toEqual(expect.any(String));
    const next = await t.owner.get<ListedToken[]>(`${path()}?limit=3&cursor=${cursor}`);
    expect(next.body.map((x) => x.name)).toEqual(['expired']);
    expect(next.headers.get('x-next-cursor')).toBeNull();

    for (const query of ['state=spent', 'limit=0', 'limit=501', 'cursor=abc', 'token=x']) {
      const bad = await t.owner.get(`${path()}?${query}`);
      expect(bad.status, query).toBe(422);
    }
  });

  it('revokes an unspent token, which then enrolls nothing: once audited, a spent one a 409', async () => {
    const token = await issue(t.owner, 'leaked');
    const first = await t.owner.delete<ListedToken>(`${path()}/${token.id}`);
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ id: token.id, state: 'revoked', revokedAt: expect.any(String) });
    const again = await t.owner.delete<ListedToken>(`${path()}/${token.id}`);
    expect(again.status).toBe(200);
    expect(again.body.revokedAt).toBe(first.body.revokedAt);
    const refused = await enroll(token.token);
    expect(refused.status).toBe(401);
    expect(refused.body.message).toBe('The enrollment token was revoked');
    const audit = await t.owner.get<{ targetId: string; metadata: unknown }[]>(
      `/orgs/${t.orgId}/audit?action=enrollment_token.revoke&targetId=${token.id}`,
    );
    expect(audit.body).toEqual([expect.objectContaining({ targetId: token.id, metadata: { name: 'leaked' } })]);

    const spent = await issue(t.owner, 'spent');
    expect((await enroll(spent.token)).status).toBe(201);
    const conflict = await t.owner.delete(`${path()}/${spent.id}`);
    expect(conflict.status).toBe(409);
    expect(conflict.body.message).toMatch(/already used to enroll an agent: revoke that agent instead/);

    expect((await t.owner.delete(`${path()}/00000000-0000-4000-8000-000000000000`)).status).toBe(404);
    expect((await t.owner.delete(`${path()}/not-an-id`)).status).toBe(404);
  });

  it("lets an issuer revoke their own, another's only owners and operators, and a viewer read them", async () => {
    const member = await addUser(t.owner, t.orgId, 'member-2@example.test', 'member');
    const operator = await addUser(t.owner, t.orgId, 'operator@example.test', 'operator');
    const viewer = await addUser(t.owner, t.orgId, 'viewer@example.test', 'viewer');
    const mine = await issue(member.client, 'mine');
    const owners = await issue(t.owner, 'the owner’s');
    expect((await member.client.delete(`${path()}/${owners.id}`)).status).toBe(403);
    expect((await member.client.delete(`${path()}/${mine.id}`)).status).toBe(200);
    const theirs = await issue(member.client, 'theirs');
    expect((await viewer.client.delete(`${path()}/${theirs.id}`)).status).toBe(403);
    expect((await operator.client.delete(`${path()}/${theirs.id}`)).status).toBe(200);
    const read = await viewer.client.get<ListedToken[]>(`${path()}?state=revoked`);
    expect(read.status).toBe(200);
    expect(read.body.map((x) => x.name)).toEqual(expect.arrayContaining(['mine', 'theirs']));
    expect((await enroll(owners.token)).status).toBe(201);
  });

  it("revokes a member's open tokens when they are removed or made a viewer, audited with the reason", async () => {
    const leaver = await addUser(t.owner, t.orgId, 'leaver@example.test', 'member');
    const watcher = await addUser(t.owner, t.orgId, 'watcher@example.test', 'operator');
    const left = await issue(leaver.client, 'left with its maker');
    const watched = await issue(watcher.client, 'made by a viewer to be');
    expect((await t.owner.delete(`/orgs/${t.orgId}/members/${leaver.userId}`)).status).toBe(200);
    const demoted = await t.owner.patch(`/orgs/${t.orgId}/members/${watcher.userId}`, { body: { role: 'viewer' } });
    expect(demoted.status, demoted.text).toBe(200);
    const revoked = await t.owner.get<ListedToken[]>(`${path()}?state=revoked`);
    for (const token of [
      { ...left, name: 'left with its maker' },
      { ...watched, name: 'made by a viewer to be' },
    ]) {
      expect(revoked.body.find((x) => x.id === token.id)).toMatchObject({ state: 'revoked', revokedBy: null });
      const audit = await t.owner.get<{ actorType: string; metadata: unknown }[]>(
        `/orgs/${t.orgId}/audit?action=enrollment_token.revoke&targetId=${token.id}`,
      );
      expect(audit.body).toEqual([
        expect.objectContaining({ actorType: 'user', metadata: { name: token.name, reason: 'maker_cannot_enroll' } }),
      ]);
      expect((await enroll(token.token)).body.message).toBe('The enrollment token was revoked');
    }
  });

  it('lets one of a revocation and an enrollment at once win, never both', async () => {
    const tokens = await Promise.all(Array.from({ length: 8 }, (_, i) => issue(t.owner, `race ${i}`)));
    const outcomes = await Promise.all(
      tokens.map(async (token) => {
        const [revoked, enrolled] = await Promise.all([t.owner.delete(`${path()}/${token.id}`), enroll(token.token)]);
        return `${revoked.status} ${enrolled.status}`;
      }),
    );
    for (const outcome of outcomes) expect(['200 401', '409 201']).toContain(outcome);
    const listed = await t.owner.get<ListedToken[]>(`${path()}?limit=8`);
    for (const token of listed.body) {
      expect(token.state === 'used').toBe(token.revokedAt === null);
    }
  });
});

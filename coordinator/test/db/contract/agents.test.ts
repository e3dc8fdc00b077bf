import { describe, expect, it } from 'vitest';
import type { NewAgent } from '../../../src/domain/model/agents.js';
import { newId } from '../../../src/util/ids.js';
import { DATABASES, databasesOfThisFile } from './databases.js';

const AT = '2026-01-02T03:04:05.000Z';
const later = (ms: number) => new Date(Date.parse(AT) + ms).toISOString();
const databases = databasesOfThisFile();

describe.each(DATABASES)('agents (%s)', (kind) => {
  const t = databases.use(kind);

  const org = async () => {
    const userId = newId();
    await t.repos.users.insert({ id: userId, email: `${userId}@example.test`, passwordHash: 'x', createdAt: AT });
    const orgId = newId();
    await t.repos.orgs.create({ id: orgId, name: 'acme', createdAt: AT }, userId);
    return orgId;
  };
  const token = async (orgId: string, expiresAt = later(3_600_000)) => {
    const tokenHash = newId();
    await t.repos.enrollmentTokens.insert(
      { id: newId(), orgId, name: null, expiresAt, usedAt: null, usedByAgentId: null, createdBy: null, createdAt: AT },
      tokenHash,
    );
    return tokenHash;
  };
  const agent = (fields: Partial<NewAgent> = {}): NewAgent => {
    const id = newId();
    return {
      id,
      name: 'edge-1',
      hostname: 'edge-1.local',
      os: 'linux',
      agentVersion: '1.0.0',
      publicKey: `key-${id}`,
      ...fields,
    };
  };

  it('refuses a key another agent has without spending the token; two enrollments of one key at once on two coordinators make one agent', async () => {
    const orgId = await org();
    const publicKey = `shared-${newId()}`;
    const tokens = await Promise.all([token(orgId), token(await org())]);
    const outcomes = await Promise.all(
      tokens.map((tokenHash, i) => (i % 2 ? t.other : t.repos).agents.enroll(tokenHash, agent({ publicKey }), AT)),
    );
    expect(outcomes.filter((o) => o.ok)).toHaveLength(1);
    const loser = outcomes.findIndex((o) => !o.ok);
    expect(outcomes[loser]).toEqual({ ok: false, reason: 'key_in_use' });
    // The refused token is still good for another key.
    expect((await t.repos.agents.enroll(tokens[loser]!, agent(), AT)).ok).toBe(true);
  });

  it('enrolls with a token once, even when agents race with it on two coordinators', async () => {
    const orgId = await org();
    const tokenHash = await token(orgId);
    const racers = Array.from({ length: 6 }, (_, i) => agent({ name: `racer-${i}` }));
    const outcomes = await Promise.all(
      racers.map((a, i) => (i % 2 ? t.other : t.repos).agents.enroll(tokenHash, a, later(i))),
    );
    const enrolled = outcomes.filter((o) => o.ok);
    expect(enrolled).toHaveLength(1);
    expect(outcomes.filter((o) => !o.ok).map((o) => !o.ok && o.reason)).toEqual(Array(5).fill('used'));
    const won = enrolled[0]!.ok ? enrolled[0]!.agent : null;
    expect(won).toMatchObject({
      orgId,
      status: 'pending',
      lastSeenAt: null,
      revokedAt: null,
      hostname: 'edge-1.local',
    });
    expect(await t.repos.agents.listByOrg(orgId)).toEqual([won]);
    // The token records when and by which agent it was spent.
    expect(
      await t.rows(`SELECT used_at, used_by_agent_id FROM enrollment_tokens WHERE token_hash = '${tokenHash}'`),
    ).toEqual([{ used_at: won!.enrolledAt, used_by_agent_id: won!.id }]);
  });

  it('refuses an unknown or an expired token', async () => {
    const orgId = await org();
    expect(await t.repos.agents.enroll('unknown', agent(), AT)).toEqual({ ok: false, reason: 'unknown' });
    const expired = await token(orgId, later(-1));
    expect(await t.repos.agents.enroll(expired, agent(), AT)).toEqual({ ok: false, reason: 'expired' });
    expect(await t.repos.agents.listByOrg(orgId)).toEqual([]);
  });

  it('revokes the open tokens of a maker who leaves the organization or becomes a viewer: they enroll nothing, even once the maker is back', async () => {
    const ownerId = newId();
    await t.repos.users.insert({ id: ownerId, email: `${ownerId}@example.test`, passwordHash: 'x', createdAt: AT });
    const orgId = newId();
    await t.repos.orgs.create({ id: orgId, name: 'acme', createdAt: AT }, ownerId);
    const [leaver, viewer] = [newId(), newId()];
    for (const id of [leaver, viewer]) {
      await t.repos.users.insert({ id, email: `${id}@example.test`, passwordHash: 'x', createdAt: AT });
      await t.repos.orgs.addMember(orgId, id, 'operator', AT);
    }
    const made = async (createdBy: string, name: string | null, expiresAt = later(3_600_000)) => {
      const token = { id: newId(), hash: newId(), name };
      await t.repos.enrollmentTokens.insert(
        { id: token.id, orgId, name, expiresAt, usedAt: null, usedByAgentId: null, createdBy, createdAt: AT },
        token.hash,
      );
      return token;
    };
    const [left, spent, lapsed, stays] = [
      await made(leaver, 'rack 4'),
      await made(leaver, null),
      await made(leaver, null, later(1)),
      await made(ownerId, null),
    ];
    expect((await t.repos.agents.enroll(spent.hash, agent(), AT)).ok).toBe(true);
    const watched = await made(viewer, null);

    // Removed (from another coordinator): only the open one is revoked, with the membership.
    expect(await t.other.orgs.removeMember(orgId, leaver, later(2))).toEqual({
      revokedInvitations: [],
      revokedEnrollmentTokens: [{ id: left.id, name: 'rack 4' }],
    });
    expect(await t.repos.enrollmentTokens.findInOrg(orgId, left.id)).toMatchObject({ revokedAt: later(2) });
    expect(await t.repos.enrollmentTokens.findInOrg(orgId, lapsed.id)).toMatchObject({ revokedAt: null });
    expect(await t.repos.agents.enroll(left.hash, agent(), later(3))).toEqual({ ok: false, reason: 'revoked' });
    expect((await t.repos.agents.enroll(stays.hash, agent(), later(3))).ok).toBe(true);
    // Back in the organization, the token stays revoked.
    await t.repos.orgs.addMember(orgId, leaver, 'member', later(4));
    expect(await t.repos.agents.enroll(left.hash, agent(), later(5))).toEqual({ ok: false, reason: 'revoked' });

    // Another role that enrolls revokes nothing; a viewer's goes, and stays gone once a member again.
    expect(await t.repos.orgs.setRole(orgId, viewer, 'member', later(6))).toEqual({
      revokedInvitations: [],
      revokedEnrollmentTokens: [],
    });
    expect(await t.repos.orgs.setRole(orgId, viewer, 'viewer', later(7))).toEqual({
      revokedInvitations: [],
      revokedEnrollmentTokens: [{ id: watched.id, name: null }],
    });
    await t.repos.orgs.setRole(orgId, viewer, 'member', later(8));
    expect(await t.repos.agents.enroll(watched.hash, agent(), later(9))).toEqual({ ok: false, reason: 'revoked' });
  });

  it('refuses a token of a maker who may no longer enroll, writing nothing, also when made while another coordinator demotes them', async () => {
    const ownerId = newId();
    await t.repos.users.insert({ id: ownerId, email: `${ownerId}@example.test`, passwordHash: 'x', createdAt: AT });
    const orgId = newId();
    await t.repos.orgs.create({ id: orgId, name: 'acme', createdAt: AT }, ownerId);
    const maker = newId();
    await t.repos.users.insert({ id: maker, email: `${maker}@example.test`, passwordHash: 'x', createdAt: AT });
    await t.repos.orgs.addMember(orgId, maker, 'member', AT);
    const make = (repos: typeof t.repos, createdBy: string | null) => {
      const token = { id: newId(), orgId, name: null, expiresAt: later(3_600_000), usedAt: null };
      return repos.enrollmentTokens.insert({ ...token, usedByAgentId: null, createdBy, createdAt: AT }, newId());
    };
    const open = async () =>
      (await t.repos.enrollmentTokens.list(orgId, { state: 'open', at: AT, limit: 100 })).filter(
        (token) => token.createdBy === maker,
      );

    expect(await make(t.repos, maker)).toEqual({ outcome: 'ok' });
    await t.repos.orgs.setRole(orgId, maker, 'viewer', AT);
    expect(await make(t.repos, maker)).toEqual({ outcome: 'maker_cannot_enroll', role: 'viewer' });
    await t.repos.orgs.removeMember(orgId, maker, AT);
    expect(await make(t.other, maker)).toEqual({ outcome: 'maker_cannot_enroll', role: null });
    expect(await open()).toEqual([]);
    // A token without a maker (made by the coordinator itself) needs no role.
    expect(await make(t.repos, null)).toEqual({ outcome: 'ok' });

    // Tokens made while another coordinator makes the maker a viewer: each is made before the
    // change (and revoked by it) or refused after it; none is left open.
    for (let round = 0; round < 5; round++) {
      await t.repos.orgs.addMember(orgId, maker, 'member', AT);
      const made = Array.from({ length: 6 }, () => make(t.repos, maker));
      const change = t.other.orgs.setRole(orgId, maker, 'viewer', AT);
      made.push(...Array.from({ length: 6 }, () => make(t.repos, maker)));
      const [outcomes, changed] = await Promise.all([Promise.all(made), change]);
      const revoked = typeof changed === 'object' ? changed.revokedEnrollmentTokens.length : -1;
      expect(revoked).toBe(outcomes.filter((o) => o.outcome === 'ok').length);
      expect(await open()).toEqual([]);
      await t.repos.orgs.removeMember(orgId, maker, AT);
    }
  });

  it('lists the most recently registered first, and finds agents only in their organization', async () => {
    const orgId = await org();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const a = agent();
      await t.repos.agents.enroll(await token(orgId), a, AT); // the same instant
      ids.push(a.id);
    }
    expect((await t.repos.agents.listByOrg(orgId)).map((a) => a.id)).toEqual([...ids].reverse());
    expect((await t.repos.agents.listByIds(orgId, [ids[0]!, ids[2]!, newId()])).map((a) => a.id)).toEqual([
      ids[2],
      ids[0],
    ]);
    expect(await t.repos.agents.listByIds(orgId, [])).toEqual([]);
    expect(await t.repos.agents.findInOrg(newId(), ids[0]!)).toBeNull();
    expect((await t.repos.agents.findById(ids[0]!))?.id).toBe(ids[0]);
    expect(await t.repos.agents.edit(newId(), ids[0]!, 0, { name: 'x' })).toBeNull();
  });

  it("edits the name and the operators' labels from the revision they were made from, counting one", async () => {
    const orgId = await org();
    const a = agent();
    await t.repos.agents.enroll(await token(orgId), a, AT);
    expect((await t.repos.agents.findById(a.id))?.revision).toBe(0);
    const renamed = await t.repos.agents.edit(orgId, a.id, 0, { name: 'renamed' });
    expect(renamed).toMatchObject({ name: 'renamed', operatorLabels: {}, revision: 1 });
    const both = await t.repos.agents.edit(orgId, a.id, 1, { name: 'again', operatorLabels: { site: 'munich' } });
    expect(both).toMatchObject({ name: 'again', operatorLabels: { site: 'munich' }, revision: 2 });
    // From a revision another change left behind: nothing is written.
    expect(await t.repos.agents.edit(orgId, a.id, 1, { operatorLabels: {} })).toBe('changed');
    expect(await t.repos.agents.findById(a.id)).toMatchObject({ name: 'again', operatorLabels: { site: 'munich' } });
    const labelsOnly = await t.repos.agents.edit(orgId, a.id, 2, { operatorLabels: {} });
    expect(labelsOnly).toMatchObject({ name: 'again', operatorLabels: {}, labels: {}, revision: 3 });
  });

  it('moves between connected and disconnected, never out of revoked', async () => {
    const orgId = await org();
    const a = agent();
    await t.repos.agents.enroll(await token(orgId), a, AT);
    expect(await t.repos.agents.markConnected(a.id, later(1))).toBe(true);
    expect(await t.repos.agents.listConnectedIds()).toEqual([a.id]);
    expect(await t.repos.agents.listConnectedIds(later(2))).toEqual([a.id]);
    expect(await t.repos.agents.listConnectedIds(later(1))).toEqual([]);
    // The version the stream names is kept (a self-update); a stream without one leaves it.
    const enrolledVersion = (await t.repos.agents.findById(a.id))?.agentVersion;
    expect(await t.repos.agents.markConnected(a.id, later(1), 4, '0.2.0')).toBe(true);
    expect((await t.repos.agents.findById(a.id))?.agentVersion).toBe('0.2.0');
    expect(await t.repos.agents.markConnected(a.id, later(1))).toBe(true);
    expect((await t.repos.agents.findById(a.id))?.agentVersion).toBe('0.2.0');
    expect(enrolledVersion).not.toBe('0.2.0');
    await t.repos.agents.touch([a.id, newId()], later(2));
    expect((await t.repos.agents.findById(a.id))?.lastSeenAt).toBe(later(2));
    expect(await t.repos.agents.markDisconnected(a.id, null, later(2))).toBe(true);
    expect(await t.repos.agents.markDisconnected(a.id, later(3), later(3))).toBe(false);
    expect(await t.repos.agents.findById(a.id)).toMatchObject({ status: 'disconnected', lastSeenAt: later(2) });
    expect(await t.repos.agents.listLastSeen()).toEqual([{ id: a.id, name: 'edge-1', lastSeenAt: later(2) }]);
    const revoked = await t.repos.agents.revoke(orgId, a.id, later(4));
    expect(revoked).toMatchObject({ agent: { status: 'revoked', revokedAt: later(4) }, first: true });
    expect(await t.repos.agents.revoke(orgId, a.id, later(5))).toMatchObject({
      agent: { revokedAt: later(4) },
      first: false,
    });
    expect(await t.repos.agents.markConnected(a.id, later(6))).toBe(false);
    expect(await t.repos.agents.listLastSeen()).toEqual([]);
    expect(await t.repos.agents.revoke(orgId, newId(), later(7))).toBeNull();
  });

  it('is revoked first by one of two revocations at once from two coordinators', async () => {
    const orgId = await org();
    const a = agent();
    await t.repos.agents.enroll(await token(orgId), a, AT);
    for (let round = 0; round < 5; round++) {
      const b = agent();
      await t.repos.agents.enroll(await token(orgId), b, AT);
      const outcomes = await Promise.all([
        t.repos.agents.revoke(orgId, b.id, later(1)),
        t.other.agents.revoke(orgId, b.id, later(2)),
      ]);
      expect(outcomes.map((o) => o?.first).sort()).toEqual([false, true]);
      const revokedAt = outcomes.find((o) => o?.first)!.agent.revokedAt;
      expect(outcomes.map((o) => o?.agent.revokedAt)).toEqual([revokedAt, revokedAt]);
    }
  });

  it('stays connected while another coordinator has seen it since, and comes back with its pings', async () => {
    const orgId = await org();
    const a = agent();
    await t.repos.agents.enroll(await token(orgId), a, AT);
    expect(await t.repos.agents.markConnected(a.id, later(1))).toBe(true);
    // Its stream dropped here at later(2), while another coordinator pinged it at later(3).
    await t.other.agents.touch([a.id], later(3));
    expect(await t.repos.agents.markDisconnected(a.id, later(2), later(2))).toBe(false);
    expect(await t.repos.agents.findById(a.id)).toMatchObject({ status: 'connected', lastSeenAt: later(3) });
    // Marked disconnected all the same (its pings were rarer than the grace): the next ping heals it.
    expect(await t.repos.agents.markDisconnected(a.id, null, later(4))).toBe(true);
    await t.other.agents.touch([a.id], later(5));
    expect(await t.repos.agents.findById(a.id)).toMatchObject({ status: 'connected', lastSeenAt: later(5) });
    // Never a revoked agent.
    await t.repos.agents.revoke(orgId, a.id, later(6));
    await t.other.agents.touch([a.id], later(7));
    expect(await t.repos.agents.findById(a.id)).toMatchObject({ status: 'revoked' });
  });

  it('refuses a replayed nonce, whichever coordinator sees it, and forgets expired ones', async () => {
    const now = Date.parse(AT);
    expect(await t.repos.agents.rememberNonce('agent-1', 'nonce-aaaaaaaaaaaa', now + 300_000, now)).toBe(true);
    const replays = await Promise.all([
      t.repos.agents.rememberNonce('agent-1', 'nonce-aaaaaaaaaaaa', now + 300_000, now + 1),
      t.other.agents.rememberNonce('agent-1', 'nonce-aaaaaaaaaaaa', now + 300_000, now + 1),
    ]);
    expect(replays).toEqual([false, false]);
    expect(await t.repos.agents.rememberNonce('agent-2', 'nonce-aaaaaaaaaaaa', now + 300_000, now)).toBe(true);
    // Past its window and purged: the nonce may be used again.
    expect(await t.repos.agents.rememberNonce('agent-1', 'nonce-aaaaaaaaaaaa', now + 1_000_000, now + 600_000)).toBe(
      true,
    );
  });
});

import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enrollTestAgent, type TestAgent } from '../helpers/agent.js';
import { OWNER_EMAIL, startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import type { ApiClient } from '../helpers/http.js';
import { auditEntries } from '../helpers/audit.js';
import { addUser, outsider } from '../helpers/members.js';
import { issueApiToken, type Grant } from '../helpers/tokens.js';

const UNKNOWN_ID = '00000000-0000-4000-8000-000000000000';
const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

describe('API token management', () => {
  let t: TestCoordinator;
  let agent: TestAgent;
  let triggerId: string;
  let bindingId: string;
  let member: { userId: string; client: ApiClient };
  let other: { client: ApiClient; orgId: string; agentId: string; triggerId: string; bindingId: string };
  let path: string;
  const noLimits = { rateLimitPerMinute: null, rateLimitPerHour: null, rateLimitPerDay: null };
  const issueBody = (extra: Record<string, unknown> = {}) => ({ name: 'ci', scopes: [], ...noLimits, ...extra });

  const makeTrigger = async (client: ApiClient, orgId: string, agentId: string) => {
    const res = await client.post(`/orgs/${orgId}/triggers`, {
      body: { name: 'deploy', agentId, scopeType: 'agent', responseMode: 'async' },
    });
    if (res.status !== 201) throw new Error(`trigger: ${res.status} ${res.text}`);
    return res.body.id as string;
  };
  const defaultBinding = async (client: ApiClient, orgId: string) => {
    const bindings = (await client.get(`/orgs/${orgId}/storage-bindings`)).body as { id: string; isDefault: boolean }[];
    const binding = bindings.find((b) => b.isDefault);
    if (!binding) throw new Error('no default binding');
    return binding.id;
  };
  const auditOf = (action: string) => auditEntries(t.owner, t.orgId, action);
  const expect422 = (res: { status: number; body: any; text: string }, field: string) => {
    expect(res.status, res.text).toBe(422);
    expect(res.body).toMatchObject({ statusCode: 422, code: 'validation_failed', message: expect.any(String) });
    expect(
      res.body.details.map((d: { path: string }) => d.path),
      res.text,
    ).toContain(`body.${field}`);
  };

  beforeAll(async () => {
    t = await startTestCoordinator();
    path = `/orgs/${t.orgId}/api-tokens`;
    agent = await enrollTestAgent(t.owner, t.orgId);
    triggerId = await makeTrigger(t.owner, t.orgId, agent.agentId);
    bindingId = await defaultBinding(t.owner, t.orgId);
    member = await addUser(t.owner, t.orgId, 'token-member@example.test');
    const o = await outsider(t.owner, t.orgId, 'token-outsider@example.test');
    const otherAgent = await enrollTestAgent(o.client, o.orgId);
    other = {
      client: o.client,
      orgId: o.orgId,
      agentId: otherAgent.agentId,
      triggerId: await makeTrigger(o.client, o.orgId, otherAgent.agentId),
      bindingId: await defaultBinding(o.client, o.orgId),
    };
  });
  afterAll(() => t?.close());

  it('issues a token whose plaintext is shown once and stored only as a hash', async () => {
    const scopes: Grant[] = [
      { type: 'agent', agentIds: [agent.agentId] },
      { type: 'trigger', triggerIds: [triggerId] },
      { type: 'storage', bindingIds: [bindingId], permissions: ['write', 'read'] },
    ];
    const res = await t.owner.post(path, {
      body: { name: ' deploy bot ', scopes, rateLimitPerMinute: 10, rateLimitPerHour: 100, rateLimitPerDay: null },
    });
    expect(res.status, res.text).toBe(201);
    const plaintext: string = res.body.token;
    expect(plaintext).toMatch(/^drv_[A-Za-z0-9_-]{43,}$/);
    const view = {
      id: res.body.id,
      name: 'deploy bot',
      hint: `drv_…${plaintext.slice(-4)}`,
      scopes: [scopes[0], scopes[1], { type: 'storage', bindingIds: [bindingId], permissions: ['read', 'write'] }],
      rateLimit: { perMinute: 10, perHour: 100, perDay: null },
      expiresAt: null,
      revokedAt: null,
      createdAt: expect.any(String),
      // The issuer: the owner signed in.
      userId: (await t.owner.get<{ user: { id: string } }>('/auth/session')).body.user.id,
    };
    expect(res.body).toEqual({ ...view, token: plaintext });

    const list = await t.owner.get(path);
    expect(list.status).toBe(200);
    expect(list.body[0]).toEqual(view);
    expect(list.text).not.toContain(plaintext);
    const one = await t.owner.get(`${path}/${res.body.id}`);
    expect(one.status).toBe(200);
    expect(one.body).toEqual(view);
    expect(one.text).not.toContain(plaintext.slice(4));

    const members = (await t.owner.get(`/orgs/${t.orgId}/members`)).body as { userId: string; email: string }[];
    const owner = members.find((m) => m.email === OWNER_EMAIL);
    // Found by the hash of its secret, with the member who issued it: neither is in the API.
    const stored = await t.coordinator.ctx.repos.apiTokens.findByHash(sha256(plaintext));
    expect(stored).toMatchObject({ id: res.body.id, orgId: t.orgId, userId: owner!.userId });
    const audit = await auditOf('api_token.issue');
    expect(audit[0]).toMatchObject({
      actorType: 'user',
      actorId: owner!.userId,
      targetType: 'api_token',
      targetId: res.body.id,
    });
    expect(JSON.stringify(audit)).not.toContain(plaintext.slice(4));
  });

  it('gives every token a different secret', async () => {
    const a = await issueApiToken(t.owner, t.orgId, []);
    const b = await issueApiToken(t.owner, t.orgId, []);
    expect(a.token).not.toBe(b.token);
    expect(a.id).not.toBe(b.id);
  });

  it('accepts a token without grants and a storage grant over every binding', async () => {
    expect((await issueApiToken(t.owner, t.orgId, [])).body.scopes).toEqual([]);
    const all = await issueApiToken(t.owner, t.orgId, [{ type: 'storage', bindingIds: null, permissions: ['delete'] }]);
    expect(all.body.scopes).toEqual([{ type: 'storage', bindingIds: null, permissions: ['delete'] }]);
  });

  it('keeps a future expiry in UTC and refuses a past one', async () => {
    const future = new Date(Date.now() + 86_400_000);
    const offset = future.toISOString().replace('Z', '+00:00');
    const issued = await issueApiToken(t.owner, t.orgId, [], { expiresAt: offset });
    expect(issued.body.expiresAt).toBe(future.toISOString());
    expect((await issueApiToken(t.owner, t.orgId, [], { expiresAt: null })).body.expiresAt).toBeNull();
    expect422(await t.owner.post(path, { body: issueBody({ expiresAt: '2000-01-01T00:00:00Z' }) }), 'expiresAt');
  });

  it("counts expiresInSeconds from the issue on the coordinator's clock, alone and within the year 9999", async () => {
    const before = Date.now();
    const issued = await t.owner.post(path, { body: issueBody({ expiresInSeconds: 3600 }) });
    expect(issued.status, issued.text).toBe(201);
    const expiresAt = Date.parse(issued.body.expiresAt as string);
    expect(expiresAt).toBeGreaterThanOrEqual(before + 3_600_000);
    expect(expiresAt).toBeLessThanOrEqual(Date.now() + 3_600_000);
    const both = await t.owner.post(path, {
      body: issueBody({ expiresInSeconds: 3600, expiresAt: new Date(Date.now() + 86_400_000).toISOString() }),
    });
    expect422(both, 'expiresInSeconds');
    expect(both.body.details[0].message).toBe('give either expiresAt or expiresInSeconds, not both');
    expect422(await t.owner.post(path, { body: issueBody({ expiresInSeconds: 0 }) }), 'expiresInSeconds');
    expect422(await t.owner.post(path, { body: issueBody({ expiresInSeconds: 1.5 }) }), 'expiresInSeconds');
    const far = await t.owner.post(path, { body: issueBody({ expiresInSeconds: 300_000_000_000 }) });
    expect422(far, 'expiresInSeconds');
    expect(far.body.details[0].message).toMatch(
      /^must end by the year 9999: at most \d+ seconds from now, got `300000000000` \(number\)$/,
    );
  });

  it('refuses each invalid field with 422 naming it', async () => {
    const cases: [string, Record<string, unknown>][] = [
      ['name', issueBody({ name: '' })],
      ['name', issueBody({ name: '  ' })],
      ['name', issueBody({ name: 'n'.repeat(256) })],
      ['name', issueBody({ name: 7 })],
      ['scopes', issueBody({ scopes: null })],
      ['scopes', issueBody({ scopes: { type: 'agent' } })],
      ['scopes.0', issueBody({ scopes: ['agent'] })],
      ['scopes.0.type', issueBody({ scopes: [{ type: 'admin' }] })],
      ['scopes.0.type', issueBody({ scopes: [{ agentIds: [agent.agentId] }] })],
      [
        'scopes.1.type',
        issueBody({
          scopes: [
            { type: 'agent', agentIds: [agent.agentId] },
            { type: 'agent', agentIds: [agent.agentId] },
          ],
        }),
      ],
      ['scopes.0.extra', issueBody({ scopes: [{ type: 'agent', agentIds: [agent.agentId], extra: 1 }] })],
      [
        'scopes.0.triggerIds',
        issueBody({ scopes: [{ type: 'agent', agentIds: [agent.agentId], triggerIds: [triggerId] }] }),
      ],
      [
        'scopes.0.permissions',
        issueBody({ scopes: [{ type: 'trigger', triggerIds: [triggerId], permissions: ['read'] }] }),
      ],
      ['scopes.0.agentIds', issueBody({ scopes: [{ type: 'agent' }] })],
      ['scopes.0.agentIds', issueBody({ scopes: [{ type: 'agent', agentIds: [] }] })],
      ['scopes.0.agentIds', issueBody({ scopes: [{ type: 'agent', agentIds: null }] })],
      ['scopes.0.agentIds.0', issueBody({ scopes: [{ type: 'agent', agentIds: ['not-a-uuid'] }] })],
      ['scopes.0.agentIds.1', issueBody({ scopes: [{ type: 'agent', agentIds: [agent.agentId, agent.agentId] }] })],
      ['scopes.0.agentIds.0', issueBody({ scopes: [{ type: 'agent', agentIds: [UNKNOWN_ID] }] })],
      ['scopes.0.triggerIds', issueBody({ scopes: [{ type: 'trigger' }] })],
      ['scopes.0.triggerIds.0', issueBody({ scopes: [{ type: 'trigger', triggerIds: [UNKNOWN_ID] }] })],
      ['scopes.0.bindingIds', issueBody({ scopes: [{ type: 'storage', permissions: ['read'] }] })],
      ['scopes.0.bindingIds', issueBody({ scopes: [{ type: 'storage', bindingIds: [], permissions: ['read'] }] })],
      [
        'scopes.0.bindingIds.0',
        issueBody({ scopes: [{ type: 'storage', bindingIds: [UNKNOWN_ID], permissions: ['read'] }] }),
      ],
      ['scopes.0.permissions', issueBody({ scopes: [{ type: 'storage', bindingIds: null }] })],
      ['scopes.0.permissions', issueBody({ scopes: [{ type: 'storage', bindingIds: null, permissions: [] }] })],
      [
        'scopes.0.permissions.0',
        issueBody({ scopes: [{ type: 'storage', bindingIds: null, permissions: ['admin'] }] }),
      ],
      [
        'scopes.0.permissions.1',
        issueBody({ scopes: [{ type: 'storage', bindingIds: null, permissions: ['read', 'read'] }] }),
      ],
      [
        'scopes',
        issueBody({ scopes: Array.from({ length: 17 }, () => ({ type: 'agent', agentIds: [agent.agentId] })) }),
      ],
      ['rateLimitPerMinute', issueBody({ rateLimitPerMinute: 0 })],
      ['rateLimitPerHour', issueBody({ rateLimitPerHour: -5 })],
      ['rateLimitPerDay', issueBody({ rateLimitPerDay: 1.5 })],
      ['rateLimitPerDay', issueBody({ rateLimitPerDay: '100' })],
      ['rateLimitPerMinute', issueBody({ rateLimitPerMinute: 2_000_000_000 })],
      ['expiresAt', issueBody({ expiresAt: 'tomorrow' })],
      ['expiresAt', issueBody({ expiresAt: '2999-01-01' })],
      ['expiresAt', issueBody({ expiresAt: 1893456000 })],
      ['expiresAt', issueBody({ expiresAt: '2000-01-01T00:00:00Z' })],
      ['token', issueBody({ token: 'drv_chosen' })],
      ['userId', issueBody({ userId: UNKNOWN_ID })],
    ];
    for (const [field, body] of cases) expect422(await t.owner.post(path, { body }), field);
  });

  it('takes the three rate limits independently (spec: Limits), a minute limit above the hour one too', async () => {
    const res = await t.owner.post(path, { body: issueBody({ rateLimitPerMinute: 10, rateLimitPerHour: 5 }) });
    expect(res.status, res.text).toBe(201);
    expect(res.body.rateLimit).toEqual({ perMinute: 10, perHour: 5, perDay: null });
  });

  it('requires the name and the scopes', async () => {
    for (const field of ['name', 'scopes']) {
      const body: Record<string, unknown> = issueBody();
      delete body[field];
      expect422(await t.owner.post(path, { body }), field);
    }
  });

  it('takes omitted rate limits as no limit in that window', async () => {
    const res = await t.owner.post(path, { body: { name: 'ci', scopes: [], rateLimitPerHour: 100 } });
    expect(res.status, res.text).toBe(201);
    expect(res.body.rateLimit).toEqual({ perMinute: null, perHour: 100, perDay: null });
    const bare = await t.owner.post(path, { body: { name: 'ci', scopes: [] } });
    expect(bare.status, bare.text).toBe(201);
    expect(bare.body.rateLimit).toEqual({ perMinute: null, perHour: null, perDay: null });
  });

  it('refuses wrong bodies and malformed JSON with 4xx, never 500', async () => {
    for (const body of [[], 'text', 42, null]) {
      const res = await t.owner.post(path, { body });
      expect(res.status, JSON.stringify(body)).toBe(422);
    }
    for (const rawBody of ['{"name":', '', '[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[']) {
      const res = await t.owner.post(path, { rawBody, headers: { 'content-type': 'application/json' } });
      expect(res.status).toBeGreaterThanOrEqual(400);
      expect(res.status).toBeLessThan(500);
      expect(res.body).toMatchObject({ statusCode: res.status, code: expect.any(String) });
    }
    const huge = await t.owner.post(path, { body: issueBody({ name: 'x'.repeat(2_000_000) }) });
    expect([413, 422]).toContain(huge.status);
    expect((await t.owner.get(`${path}/not-a-uuid`)).status).toBe(404);
    expect((await t.owner.delete(`${path}/not-a-uuid`)).status).toBe(404);
  });

  it("refuses another organization's agents, triggers and bindings, naming each id", async () => {
    const res = await t.owner.post(path, {
      body: issueBody({
        scopes: [
          { type: 'agent', agentIds: [agent.agentId, other.agentId] },
          { type: 'trigger', triggerIds: [other.triggerId, triggerId] },
          { type: 'storage', bindingIds: [other.bindingId], permissions: ['read'] },
        ],
      }),
    });
    expect(res.status).toBe(422);
    expect(res.body.details.map((d: { path: string }) => d.path)).toEqual([
      'body.scopes.0.agentIds.1',
      'body.scopes.1.triggerIds.0',
      'body.scopes.2.bindingIds.0',
    ]);
    expect(res.body.message).toContain(other.agentId);
    expect((await t.owner.get(path)).body.map((x: { name: string }) => x.name)).not.toContain('refused');
  });

  it('refuses revoked agents and deleted triggers in grants', async () => {
    const doomedAgent = await enrollTestAgent(t.owner, t.orgId);
    await t.coordinator.ctx.repos.agents.revoke(t.orgId, doomedAgent.agentId, new Date().toISOString());
    expect422(
      await t.owner.post(path, { body: issueBody({ scopes: [{ type: 'agent', agentIds: [doomedAgent.agentId] }] }) }),
      'scopes.0.agentIds.0',
    );
    const doomedTrigger = await makeTrigger(t.owner, t.orgId, agent.agentId);
    expect((await t.owner.delete(`/orgs/${t.orgId}/triggers/${doomedTrigger}`)).status).toBe(200);
    expect422(
      await t.owner.post(path, { body: issueBody({ scopes: [{ type: 'trigger', triggerIds: [doomedTrigger] }] }) }),
      'scopes.0.triggerIds.0',
    );
  });

  it('revokes a token: 200 with revokedAt, still listed, idempotent, audited once', async () => {
    const issued = await issueApiToken(t.owner, t.orgId, [{ type: 'agent', agentIds: [agent.agentId] }], {
      name: 'to revoke',
    });
    const res = await t.owner.delete(`${path}/${issued.id}`);
    expect(res.status).toBe(200);
    const { token: _, ...view } = issued.body;
    expect(res.body).toEqual({ ...view, revokedAt: expect.any(String) });
    expect(res.text).not.toContain(issued.token);
    const listed = (await t.owner.get(path)).body.find((x: { id: string }) => x.id === issued.id);
    expect(listed).toEqual(res.body);
    const again = await t.owner.delete(`${path}/${issued.id}`);
    expect(again.status).toBe(200);
    expect(again.body.revokedAt).toBe(res.body.revokedAt);
    const kept = (await t.owner.get(path)).body.find((x: { id: string }) => x.id === issued.id);
    expect(kept.revokedAt).toBe(res.body.revokedAt);
    const audit = (await auditOf('api_token.revoke')).filter((e) => e.targetId === issued.id);
    expect(audit).toHaveLength(1);
    expect((await t.owner.delete(`${path}/${UNKNOWN_ID}`)).status).toBe(404);
  });

  it("lets members issue, list and revoke their own tokens; an owner's only an owner revokes (403)", async () => {
    const mine = await issueApiToken(member.client, t.orgId, [{ type: 'trigger', triggerIds: [triggerId] }], {
      name: 'member token',
    });
    // Who issued a token is not in the API.
    const stored = await t.coordinator.ctx.repos.apiTokens.findInOrg(t.orgId, mine.id);
    expect(stored?.userId).toBe(member.userId);
    expect((await member.client.get(path)).body.map((x: { id: string }) => x.id)).toContain(mine.id);
    const owners = await issueApiToken(t.owner, t.orgId, [], { name: 'owner token' });
    const refused = await member.client.delete(`${path}/${owners.id}`);
    expect(refused.status).toBe(403);
    expect((await t.owner.get(`${path}/${owners.id}`)).body.revokedAt).toBeNull();
    const revoked = await member.client.delete(`${path}/${mine.id}`);
    expect(revoked.status).toBe(200);
    expect(revoked.body.revokedAt).not.toBeNull();
  });

  it("keeps organizations apart: another org's token is 404 and non-members get 404", async () => {
    const foreign = await issueApiToken(other.client, other.orgId, [{ type: 'agent', agentIds: [other.agentId] }]);
    for (const res of [
      await t.owner.get(`${path}/${foreign.id}`),
      await t.owner.delete(`${path}/${foreign.id}`),
      await other.client.get(path),
      await other.client.post(path, { body: issueBody() }),
      await other.client.delete(`${path}/${UNKNOWN_ID}`),
    ]) {
      expect(res.status).toBe(404);
      expect(res.body.code).toBe('not_found');
    }
    expect((await t.owner.get(path)).body.map((x: { id: string }) => x.id)).not.toContain(foreign.id);
    expect((await other.client.get(`/orgs/${other.orgId}/api-tokens/${foreign.id}`)).body.revokedAt).toBeNull();
  });

  it('refuses calls without a session, and API tokens as sessions, with 401', async () => {
    const issued = await issueApiToken(t.owner, t.orgId, []);
    expect((await t.api.get(path)).status).toBe(401);
    expect((await t.api.post(path, { body: issueBody() })).status).toBe(401);
    expect((await t.api.get(path, { token: issued.token })).status).toBe(401);
    expect((await t.api.post(path, { body: issueBody(), token: issued.token })).status).toBe(401);
  });
});

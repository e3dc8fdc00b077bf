import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import { enrollTestAgent, workflow, type TestAgent } from '../helpers/agent.js';
import { addUser } from '../helpers/members.js';
import type { ApiClient } from '../helpers/http.js';

const AGENT_FIELDS = [
  'agentVersion',
  'enrolledAt',
  'hostname',
  'id',
  'labels',
  'lastSeenAt',
  'name',
  'operatorLabels',
  'os',
  'reportedLabels',
  'revision',
  'status',
];
const UNKNOWN_ID = '00000000-0000-4000-8000-000000000000';

describe('agent management', () => {
  let t: TestCoordinator;
  let first: TestAgent;
  let second: TestAgent;
  let member: ApiClient;
  beforeAll(async () => {
    t = await startTestCoordinator();
    first = await enrollTestAgent(t.owner, t.orgId, { hostname: 'edge-first' });
    second = await enrollTestAgent(t.owner, t.orgId, { hostname: 'edge-second' });
    member = (await addUser(t.owner, t.orgId, 'member@example.test')).client;
  });
  afterAll(() => t?.close());

  it('lists agents most recently registered first with exactly the spec fields', async () => {
    const res = await member.get(`/orgs/${t.orgId}/agents`);
    expect(res.status).toBe(200);
    expect(res.body.map((a: { id: string }) => a.id)).toEqual([second.agentId, first.agentId]);
    for (const agent of res.body) expect(Object.keys(agent).sort()).toEqual(AGENT_FIELDS);
    expect(res.body[0]).toMatchObject({
      hostname: 'edge-second',
      status: 'pending',
      agentVersion: '0.1.0-test',
      lastSeenAt: null,
    });
    expect(res.text).not.toContain(second.publicKey);
  });

  it('reads one agent, and answers 404 for an unknown one and for a malformed id', async () => {
    const res = await member.get(`/orgs/${t.orgId}/agents/${first.agentId}`);
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(AGENT_FIELDS);
    expect(res.body.id).toBe(first.agentId);
    expect((await member.get(`/orgs/${t.orgId}/agents/${UNKNOWN_ID}`)).status).toBe(404);
    expect((await member.get(`/orgs/${t.orgId}/agents/edge-first`)).status).toBe(404);
  });

  it('renames an agent (any member), trimming the name', async () => {
    const res = await member.patch(`/orgs/${t.orgId}/agents/${first.agentId}`, {
      body: { name: '  Rack 4 / slot 2 ' },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: first.agentId, name: 'Rack 4 / slot 2', hostname: 'edge-first' });
    expect(Object.keys(res.body).sort()).toEqual(AGENT_FIELDS);
    expect((await t.owner.get(`/orgs/${t.orgId}/agents/${first.agentId}`)).body.name).toBe('Rack 4 / slot 2');
    const audit = await t.owner.get(`/orgs/${t.orgId}/audit?action=agent.rename`);
    expect(audit.body[0]).toMatchObject({ targetId: first.agentId, metadata: { to: 'Rack 4 / slot 2' } });
  });

  it('refuses bad names with 422 and unknown agents with 404', async () => {
    const path = `/orgs/${t.orgId}/agents/${first.agentId}`;
    for (const body of [
      {},
      { name: '' },
      { name: '  ' },
      { name: 'x'.repeat(256) },
      { name: 5 },
      { name: null },
      { name: 'a', status: 'connected' },
      { name: 'tab\there' },
    ]) {
      const res = await t.owner.patch(path, { body });
      expect(res.status, JSON.stringify(body)).toBe(422);
      expect(res.body.code).toBe('validation_failed');
    }
    expect((await t.owner.patch(`/orgs/${t.orgId}/agents/${UNKNOWN_ID}`, { body: { name: 'x' } })).status).toBe(404);
    expect((await t.owner.patch(path, { body: { name: 'x'.repeat(255) } })).status).toBe(200);
  });

  it("takes the labels an agent reports, an operator's labels over them, and filters by selector", async () => {
    const reported = await first.request('PUT', '/v1/agent/labels', {
      labels: { site: 'berlin', role: 'gateway', os: 'linux', arch: 'x64' },
    });
    expect(reported.status).toBe(200);
    expect(reported.body.reportedLabels).toEqual({ arch: 'x64', os: 'linux', role: 'gateway', site: 'berlin' });
    await second.request('PUT', '/v1/agent/labels', { labels: { site: 'munich', os: 'linux', arch: 'arm64' } });

    const path = `/orgs/${t.orgId}/agents/${first.agentId}`;
    const set = await member.patch(path, { body: { labels: { site: 'hamburg', tier: 'gold' } } });
    expect(set.status).toBe(200);
    expect(set.body).toMatchObject({
      labels: { arch: 'x64', os: 'linux', role: 'gateway', site: 'hamburg', tier: 'gold' },
      reportedLabels: { site: 'berlin' },
      operatorLabels: { site: 'hamburg', tier: 'gold' },
    });
    // What the agent reports again leaves the operators' labels alone, and still loses a clash.
    const again = await first.request('PUT', '/v1/agent/labels', {
      labels: { site: 'berlin', os: 'linux', arch: 'x64' },
    });
    expect(again.body.labels).toEqual({ arch: 'x64', os: 'linux', site: 'hamburg', tier: 'gold' });
    const audit = await t.owner.get(`/orgs/${t.orgId}/audit?action=agent.labels`);
    expect(audit.body).toHaveLength(1);
    expect(audit.body[0]).toMatchObject({
      targetId: first.agentId,
      metadata: { from: {}, to: { site: 'hamburg', tier: 'gold' } },
    });
    // The same labels again change nothing and are not audited again.
    expect((await member.patch(path, { body: { labels: { tier: 'gold', site: 'hamburg' } } })).status).toBe(200);
    expect((await t.owner.get(`/orgs/${t.orgId}/audit?action=agent.labels`)).body).toHaveLength(1);

    const select = async (selector: string) =>
      (await member.get(`/orgs/${t.orgId}/agents?selector=${encodeURIComponent(selector)}`)).body.map(
        (a: { id: string }) => a.id,
      );
    expect(await select('os=linux')).toEqual([second.agentId, first.agentId]);
    expect(await select('site in (hamburg,munich),arch!=arm64')).toEqual([first.agentId]);
    expect(await select('tier notin (gold)')).toEqual([second.agentId]);
    expect(await select('!tier,site')).toEqual([second.agentId]);
    expect(await select('site=berlin')).toEqual([]);
    expect(await select('')).toEqual([second.agentId, first.agentId]);

    const bad = await member.get(`/orgs/${t.orgId}/agents?selector=${encodeURIComponent('site in berlin')}`);
    expect(bad.status).toBe(422);
    expect(bad.body.details).toEqual([
      { path: 'querystring.selector', message: "not a label selector: at position 8: expected '(', found 'berlin'" },
    ]);
    // No longer than a selector a trigger or an application may store.
    const long = await member.get(`/orgs/${t.orgId}/agents?selector=${'a'.repeat(1025)}`);
    expect(long.status).toBe(422);
    expect(long.body.details).toEqual([
      expect.objectContaining({ path: 'querystring.selector', message: expect.stringContaining('1024') }),
    ]);
  });

  it("counts operators' changes as its revision, sent as ETag; a change from an older one is refused with 412", async () => {
    const path = `/orgs/${t.orgId}/agents/${second.agentId}`;
    const read = await member.get(path);
    expect(read.headers.get('etag')).toBe(`"${read.body.revision}"`);
    // A script adds a label while a person has the labels form open: the form's save is refused.
    const script = await member.patch(path, {
      body: { labels: { ...read.body.operatorLabels, rack: 'r4' } },
      headers: { 'if-match': read.headers.get('etag')! },
    });
    expect(script.status, script.text).toBe(200);
    expect(script.body.revision).toBe(read.body.revision + 1);
    expect(script.headers.get('etag')).toBe(`"${script.body.revision}"`);
    const form = await t.owner.patch(path, {
      body: { labels: { site: 'kiel' }, name: 'from-the-form' },
      headers: { 'if-match': read.headers.get('etag')! },
    });
    expect(form.status, form.text).toBe(412);
    expect(form.body).toMatchObject({ code: 'precondition_failed', details: { revision: script.body.revision } });
    expect((await member.get(path)).body).toEqual(script.body);
    // Read again, it goes in: labels and name in one change, one revision, each audited.
    const again = await t.owner.patch(path, {
      body: { labels: { site: 'kiel' }, name: 'from-the-form' },
      headers: { 'if-match': script.headers.get('etag')! },
    });
    expect(again.status, again.text).toBe(200);
    expect(again.body).toMatchObject({ name: 'from-the-form', operatorLabels: { site: 'kiel' } });
    expect(again.body.revision).toBe(script.body.revision + 1);
    const audit = await t.owner.get(`/orgs/${t.orgId}/audit?targetId=${second.agentId}`);
    expect(audit.body.slice(0, 2).map((e: { action: string }) => e.action)).toEqual(['agent.rename', 'agent.labels']);
    // A change that changes nothing counts nothing; `*` or none take the agent as it is.
    const same = await t.owner.patch(path, { body: { name: 'from-the-form' }, headers: { 'if-match': '*' } });
    expect(same.body.revision).toBe(again.body.revision);
    expect((await t.owner.patch(path, { body: { labels: {} } })).body.revision).toBe(again.body.revision + 1);
    for (const tag of ['W/"1"', '1']) {
      const res = await t.owner.patch(path, { body: { name: 'x' }, headers: { 'if-match': tag } });
      expect(res.status, tag).toBe(400);
      expect(res.body.message).toContain('If-Match must be one ETag of the agent');
    }
  });

  it("changes the operators' labels of every agent a selector matches, each audited, after a dry run", async () => {
    for (const [agent, labels] of [
      [first, { site: 'berlin', os: 'linux', arch: 'x64', zone: 'a' }],
      [second, { site: 'munich', os: 'linux', arch: 'arm64', zone: 'b' }],
    ] as const) {
      const res = await agent.request('PUT', '/v1/agent/labels', { labels });
      expect(res.status, res.text).toBe(200);
    }
    const path = `/orgs/${t.orgId}/agents/labels`;
    const labelsOf = async (agent: TestAgent) =>
      (await member.get(`/orgs/${t.orgId}/agents/${agent.agentId}`)).body.operatorLabels;
    const [firstBefore, secondBefore] = [await labelsOf(first), await labelsOf(second)];
    const dry = await member.post(path, { body: { selector: 'zone', set: { ring: 'canary' }, dryRun: true } });
    expect(dry.status, dry.text).toBe(200);
    expect(dry.body).toMatchObject({ matching: 2, changed: 2, dryRun: true });
    expect(dry.body.agents.map((a: { id: string }) => a.id)).toEqual([second.agentId, first.agentId]);
    expect(await labelsOf(first)).toEqual(firstBefore);

    const done = await member.post(path, { body: { selector: 'zone=a', set: { ring: 'canary' } } });
    expect(done.body).toEqual({
      matching: 1,
      changed: 1,
      dryRun: false,
      agents: [
        { id: first.agentId, name: expect.any(String), from: firstBefore, to: { ...firstBefore, ring: 'canary' } },
      ],
    });
    expect(await labelsOf(first)).toEqual({ ...firstBefore, ring: 'canary' });
    const audit = await t.owner.get(`/orgs/${t.orgId}/audit?action=agent.labels&targetId=${first.agentId}`);
    expect(audit.body[0].metadata).toMatchObject({ to: { ring: 'canary' }, selector: 'zone=a' });
    // The agent that has it already is not changed again; removing goes by key.
    const both = await member.post(path, { body: { selector: 'zone', set: { ring: 'canary' } } });
    expect(both.body).toMatchObject({ matching: 2, changed: 1, agents: [{ id: second.agentId }] });
    const removed = await member.post(path, { body: { selector: 'ring=canary', remove: ['ring', 'absent'] } });
    expect(removed.body).toMatchObject({ matching: 2, changed: 2 });
    expect([await labelsOf(first), await labelsOf(second)]).toEqual([firstBefore, secondBefore]);

    // Refused before anything changes: bad labels and keys, no change, a selector that does not parse.
    for (const [body, detail] of [
      [{ selector: 'zone', set: { Ring: 'x' } }, 'body.set.Ring'],
      [{ selector: 'zone', remove: ['Ring'] }, 'body.remove.0'],
      [{ selector: 'zone', set: { ring: 'a' }, remove: ['ring'] }, 'body.remove.0'],
      [{ selector: 'zone' }, 'body'],
      [{ selector: 'zone in a', set: { ring: 'a' } }, 'body.selector'],
    ] as const) {
      const res = await member.post(path, { body });
      expect(res.status, JSON.stringify(body)).toBe(422);
      expect(res.body.details.map((d: { path: string }) => d.path)).toContain(detail);
    }
    // One agent that would carry too many labels: a 422 naming it, and no agent changed.
    const keys = Array.from({ length: 32 - Object.keys(secondBefore).length }, (_, i) => `k${i}`);
    const full = await member.post(path, {
      body: { selector: 'zone=b', set: Object.fromEntries(keys.map((k) => [k, 'v'])) },
    });
    expect(full.status, full.text).toBe(200);
    const over = await member.post(path, { body: { selector: 'zone', set: { one: 'more' } } });
    expect(over.status).toBe(422);
    expect(over.body.message).toContain(second.agentId);
    expect(over.body.message).toContain(`at most 32 labels, got 33`);
    expect(await labelsOf(first)).toEqual(firstBefore);
    expect((await member.post(path, { body: { selector: 'zone=b', remove: keys } })).body.changed).toBe(1);
    expect(await labelsOf(second)).toEqual(secondBefore);
  });

  it('refuses labels past the rules with 422 naming the label, from operators and agents alike', async () => {
    const path = `/orgs/${t.orgId}/agents/${first.agentId}`;
    const many = Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`k${i}`, 'v']));
    for (const [labels, detail] of [
      [{ Site: 'x' }, 'body.labels.Site'],
      [{ site: 'a b' }, 'body.labels.site'],
      [{ site: 'x'.repeat(64) }, 'body.labels.site'],
      [{ site: 3 }, 'body.labels.site'],
      [many, 'body.labels'],
    ] as const) {
      const res = await t.owner.patch(path, { body: { labels } });
      expect(res.status, JSON.stringify(labels)).toBe(422);
      expect(res.body.details.map((d: { path: string }) => d.path)).toContain(detail);
    }
    expect((await t.owner.patch(path, { body: { labels: ['site'] } })).status).toBe(422);
    const agentRes = await first.request('PUT', '/v1/agent/labels', {
      labels: { Site: 'x', os: 'linux', arch: 'x64' },
    });
    expect(agentRes.status).toBe(422);
    expect(agentRes.body.details).toEqual([
      { path: 'body.labels.Site', message: expect.stringContaining('label key') },
    ]);
    const noOs = await first.request('PUT', '/v1/agent/labels', { labels: { site: 'x' } });
    expect(noOs.status).toBe(422);
    expect(noOs.body.details.map((d: { path: string }) => d.path)).toEqual(['body.labels.os', 'body.labels.arch']);
    // Nothing refused was stored.
    expect((await t.owner.get(path)).body.operatorLabels).toEqual({ site: 'hamburg', tier: 'gold' });
  });

  it('lets only an owner revoke', async () => {
    const res = await member.delete(`/orgs/${t.orgId}/agents/${second.agentId}`);
    expect(res.status).toBe(403);
    expect((await t.owner.get(`/orgs/${t.orgId}/agents/${second.agentId}`)).body.status).toBe('pending');
  });

  it('revokes an agent: status revoked, listeners told, signed requests refused, repeat is harmless', async () => {
    expect((await second.putWorkflows([workflow('build')])).status).toBe(200);
    const told: string[] = [];
    const unsubscribe = t.coordinator.ctx.agentEvents.onRevoked((agent) => told.push(agent.id));
    try {
      const res = await t.owner.delete(`/orgs/${t.orgId}/agents/${second.agentId}`);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ id: second.agentId, status: 'revoked' });
      expect(Object.keys(res.body).sort()).toEqual(AGENT_FIELDS);
      expect(told).toEqual([second.agentId]);

      const refused = await second.putWorkflows([workflow('build')]);
      expect(refused.status).toBe(401);

      const again = await t.owner.delete(`/orgs/${t.orgId}/agents/${second.agentId}`);
      expect(again.status).toBe(200);
      expect(again.body.status).toBe('revoked');
      expect(told).toEqual([second.agentId]);
    } finally {
      unsubscribe();
    }
    const audit = await t.owner.get(`/orgs/${t.orgId}/audit?action=agent.revoke`);
    expect(audit.body).toHaveLength(1);
    expect(audit.body[0]).toMatchObject({
      targetType: 'agent',
      targetId: second.agentId,
      metadata: { previousStatus: 'pending' },
    });
    // The other agent is untouched.
    expect((await first.putWorkflows([workflow('build')])).status).toBe(200);
  });

  it('answers 404 for a revoke of an unknown agent', async () => {
    expect((await t.owner.delete(`/orgs/${t.orgId}/agents/${UNKNOWN_ID}`)).status).toBe(404);
  });

  it('pages the list with limit and cursor, says how many match, and filters by status and text', async () => {
    const third = await enrollTestAgent(t.owner, t.orgId, { hostname: 'Lab-Third' });
    const list = (query: string) => member.get<{ id: string }[]>(`/orgs/${t.orgId}/agents?${query}`);
    const ids = (res: { body: { id: string }[] }) => res.body.map((a) => a.id);
    const one = await list('limit=2');
    expect(ids(one)).toEqual([third.agentId, second.agentId]);
    expect(one.headers.get('x-total-count')).toBe('3');
    const cursor = one.headers.get('x-next-cursor')!;
    const two = await list(`limit=2&cursor=${cursor}`);
    expect(ids(two)).toEqual([first.agentId]);
    expect(two.headers.get('x-next-cursor')).toBeNull();
    expect(two.headers.get('x-total-count')).toBe('3');
    // Without a limit, every agent that matches: in any case, of the name or the hostname.
    expect(ids(await list('q=LAB-t'))).toEqual([third.agentId]);
    // (The second was revoked above.)
    expect(ids(await list('status=pending&q=edge'))).toEqual([first.agentId]);
    const none = await list('status=connected');
    expect(none.body).toEqual([]);
    expect(none.headers.get('x-total-count')).toBe('0');
    for (const query of ['limit=0', 'limit=501', 'cursor=abc', 'cursor=0', 'status=online', 'q=']) {
      const bad = await list(query);
      expect(bad.status, query).toBe(422);
      expect((bad.body as unknown as { details: { path: string }[] }).details[0]!.path, query).toMatch(
        /^querystring\./,
      );
    }
    expect((await t.owner.delete(`/orgs/${t.orgId}/agents/${third.agentId}`)).status).toBe(200);
    expect(ids(await list('status=revoked'))).toEqual([third.agentId, second.agentId]);
  });

  it('lists the agents of some ids: any case, none of another organization or of no agent, 200 at most', async () => {
    const list = (query: string) => member.get<{ id: string }[]>(`/orgs/${t.orgId}/agents?${query}`);
    const ids = (res: { body: { id: string }[] }) => res.body.map((a) => a.id);
    const elsewhere = await t.owner.post<{ id: string }>('/orgs', { body: { name: 'elsewhere' } });
    expect(elsewhere.status, elsewhere.text).toBe(201);
    const stranger = await enrollTestAgent(t.owner, elsewhere.body.id, { hostname: 'edge-elsewhere' });
    const some = await list(
      `id=${first.agentId.toUpperCase()}&id=${second.agentId}&id=${second.agentId}&id=${stranger.agentId}&id=${randomUUID()}`,
    );
    expect(some.status, some.text).toBe(200);
    expect(ids(some)).toEqual([second.agentId, first.agentId]);
    expect(some.headers.get('x-total-count')).toBe('2');
    // With the other narrowings: the first is pending, the second revoked above.
    expect(ids(await list(`id=${first.agentId}&id=${second.agentId}&status=pending`))).toEqual([first.agentId]);
    expect(ids(await list(`id=${first.agentId}&id=${second.agentId}&q=second&limit=1`))).toEqual([second.agentId]);
    const tooMany = Array.from({ length: 201 }, () => `id=${randomUUID()}`).join('&');
    for (const query of ['id=abc', tooMany]) {
      const bad = await list(query);
      expect(bad.status).toBe(422);
      expect((bad.body as unknown as { details: { path: string }[] }).details[0]!.path).toMatch(/^querystring\.id/);
    }
  });
});

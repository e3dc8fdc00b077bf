import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import { enrollTestAgent, workflow, type TestAgent } from '../helpers/agent.js';
import { addUser } from '../helpers/members.js';
import type { ApiClient } from '../helpers/http.js';

const WORKFLOW_FIELDS = [
  'agentId',
  'createdAt',
  'description',
  'id',
  'name',
  'paramsSchema',
  'rateLimitPerDay',
  'rateLimitPerHour',
  'rateLimitPerMinute',
  'updatedAt',
  'version',
].sort();
const UNKNOWN_ID = '00000000-0000-4000-8000-000000000000';

describe('workflow management', () => {
  let t: TestCoordinator;
  let agent: TestAgent;
  let member: ApiClient;
  const ids: Record<string, string> = {};
  beforeAll(async () => {
    t = await startTestCoordinator();
    agent = await enrollTestAgent(t.owner, t.orgId);
    const deploy = workflow('deploy', {
      secretsKeys: ['DEPLOY_KEY'],
      steps: [{ run: 'echo', args: ['secret-step-marker'] }],
      paramsSchema: [{ name: 'target', type: 'enum', options: ['staging', 'prod'], required: true }],
    });
    const put = await agent.putWorkflows([deploy, workflow('build'), workflow('old')]);
    if (put.status !== 200) throw new Error(`put workflows: ${put.status} ${put.text}`);
    // Reporting the set again without `old` removes it.
    const removed = await agent.putWorkflows([deploy, workflow('build')]);
    if (removed.status !== 200) throw new Error(`put workflows: ${removed.status} ${removed.text}`);
    for (const w of put.body.workflows as { id: string; name: string }[]) ids[w.name] = w.id;
    member = (await addUser(t.owner, t.orgId, 'member@example.test')).client;
  });
  afterAll(() => t?.close());

  it('lists the active workflows ascending by name with null limits and without secrets or steps', async () => {
    const res = await member.get(`/orgs/${t.orgId}/workflows`);
    expect(res.status).toBe(200);
    expect(res.body.map((w: { name: string }) => w.name)).toEqual(['build', 'deploy']);
    for (const w of res.body) expect(Object.keys(w).sort()).toEqual(WORKFLOW_FIELDS);
    expect(res.body[1]).toMatchObject({
      id: ids.deploy,
      agentId: agent.agentId,
      description: 'deploy workflow',
      version: '1',
      paramsSchema: [{ name: 'target', type: 'enum', options: ['staging', 'prod'], required: true }],
      rateLimitPerMinute: null,
      rateLimitPerHour: null,
      rateLimitPerDay: null,
    });
    expect(res.text).not.toContain('DEPLOY_KEY');
    expect(res.text).not.toContain('secret-step-marker');
  });

  it('reads one workflow and answers 404 for a removed, unknown or malformed one', async () => {
    const res = await member.get(`/orgs/${t.orgId}/workflows/${ids.deploy}`);
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(WORKFLOW_FIELDS);
    expect(res.text).not.toContain('DEPLOY_KEY');
    expect((await member.get(`/orgs/${t.orgId}/workflows/${ids.old}`)).status).toBe(404);
    expect((await member.get(`/orgs/${t.orgId}/workflows/${UNKNOWN_ID}`)).status).toBe(404);
    expect((await member.get(`/orgs/${t.orgId}/workflows/deploy`)).status).toBe(404);
  });

  it('sets limits, keeping the keys left out and clearing those set to null', async () => {
    const path = `/orgs/${t.orgId}/workflows/${ids.build}`;
    const all = await t.owner.patch(path, {
      body: { rateLimitPerMinute: 5, rateLimitPerHour: 100, rateLimitPerDay: 1000 },
    });
    expect(all.status).toBe(200);
    expect(all.body).toMatchObject({ rateLimitPerMinute: 5, rateLimitPerHour: 100, rateLimitPerDay: 1000 });
    expect(Object.keys(all.body).sort()).toEqual(WORKFLOW_FIELDS);
    const some = await t.owner.patch(path, { body: { rateLimitPerHour: null, rateLimitPerMinute: 1_000_000_000 } });
    expect(some.body).toMatchObject({
      rateLimitPerMinute: 1_000_000_000,
      rateLimitPerHour: null,
      rateLimitPerDay: 1000,
    });
    expect((await member.get(path)).body).toMatchObject({
      rateLimitPerMinute: 1_000_000_000,
      rateLimitPerHour: null,
      rateLimitPerDay: 1000,
    });
    // Limits survive the agent reporting its workflows again.
    await agent.putWorkflows([workflow('deploy'), workflow('build', { description: 'changed' })]);
    expect((await member.get(path)).body).toMatchObject({ description: 'changed', rateLimitPerDay: 1000 });

    const audit = await t.owner.get(`/orgs/${t.orgId}/audit?action=workflow.update_limits&limit=1`);
    expect(audit.body[0]).toMatchObject({
      targetType: 'workflow',
      targetId: ids.build,
      metadata: {
        name: 'build',
        from: { perMinute: 5, perHour: 100, perDay: 1000 },
        to: { perMinute: 1_000_000_000, perHour: null, perDay: 1000 },
      },
    });
  });

  it('refuses limits that are not integers from 1 to 1e9 or null with 422', async () => {
    const path = `/orgs/${t.orgId}/workflows/${ids.deploy}`;
    for (const body of [
      {},
      { rateLimitPerMinute: 0 },
      { rateLimitPerMinute: -1 },
      { rateLimitPerHour: 1.5 },
      { rateLimitPerDay: '10' },
      { rateLimitPerDay: true },
      { rateLimitPerDay: 1_000_000_001 },
      { rateLimitPerDay: 1e300 },
      { rateLimitPerMinute: 1, rateLimitPerWeek: 5 },
      { rateLimit: { perMinute: 1 } },
    ]) {
      const res = await t.owner.patch(path, { body });
      expect(res.status, JSON.stringify(body)).toBe(422);
      expect(res.body.code).toBe('validation_failed');
    }
    expect((await member.get(path)).body).toMatchObject({
      rateLimitPerMinute: null,
      rateLimitPerHour: null,
      rateLimitPerDay: null,
    });
  });

  it('lets only an owner set limits', async () => {
    const res = await member.patch(`/orgs/${t.orgId}/workflows/${ids.deploy}`, { body: { rateLimitPerMinute: 1 } });
    expect(res.status).toBe(403);
    expect(res.body.code).toBe('forbidden');
  });

  it('answers 404 when setting limits of a removed or unknown workflow', async () => {
    for (const id of [ids.old, UNKNOWN_ID]) {
      expect(
        (await t.owner.patch(`/orgs/${t.orgId}/workflows/${id}`, { body: { rateLimitPerMinute: 1 } })).status,
      ).toBe(404);
    }
  });

  it("lists only some agents' workflows, of this organization, with agentId once for each", async () => {
    const other = await enrollTestAgent(t.owner, t.orgId);
    expect((await other.putWorkflows([workflow('alpha')])).status).toBe(200);
    const second = await t.owner.post<{ id: string }>('/orgs', { body: { name: 'elsewhere' } });
    expect(second.status, second.text).toBe(201);
    const names = async (query: string) => {
      const res = await member.get<{ name: string; agentId: string }[]>(`/orgs/${t.orgId}/workflows?${query}`);
      expect(res.status, res.text).toBe(200);
      return res.body.map((w) => `${w.name}@${w.agentId === agent.agentId ? 'agent' : 'other'}`);
    };
    expect(await names('')).toEqual(['alpha@other', 'build@agent', 'deploy@agent']);
    // In any case, as in a path.
    expect(await names(`agentId=${agent.agentId.toUpperCase()}`)).toEqual(['build@agent', 'deploy@agent']);
    expect(await names(`agentId=${other.agentId}&agentId=${agent.agentId}`)).toEqual([
      'alpha@other',
      'build@agent',
      'deploy@agent',
    ]);
    // An agent of another organization lists nothing here.
    const stranger = await enrollTestAgent(t.owner, second.body.id);
    expect((await stranger.putWorkflows([workflow('beta')])).status).toBe(200);
    expect(await names(`agentId=${stranger.agentId}&agentId=${UNKNOWN_ID}`)).toEqual([]);
    const many = Array.from({ length: 201 }, () => `agentId=${UNKNOWN_ID}`).join('&');
    for (const query of ['agentId=nope', many]) {
      const bad = await member.get(`/orgs/${t.orgId}/workflows?${query}`);
      expect(bad.status).toBe(422);
      expect(bad.body.details[0].path).toMatch(/^querystring\.agentId/);
    }
  });
});

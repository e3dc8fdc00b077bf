import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enrollTestAgent, type TestAgent } from '../helpers/agent.js';
import { startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import type { ApiClient } from '../helpers/http.js';
import { createTestJob, finishBody } from '../helpers/jobs.js';
import { addUser, outsider } from '../helpers/members.js';

const LIST_FIELDS = [
  'agentId',
  'cancelRequestedAt',
  'createdAt',
  'debug',
  'errorMessage',
  'exitCode',
  'finishedAt',
  'forceReason',
  'forced',
  'id',
  'kind',
  'output',
  'params',
  'queuedAt',
  'ref',
  'source',
  'startedAt',
  'status',
  'triggerId',
  'userId',
  'workflowId',
  'workflowName',
];

describe('dashboard job reads', () => {
  let t: TestCoordinator;
  let agent: TestAgent;
  let member: ApiClient;
  let stranger: { client: ApiClient; orgId: string };
  const triggerA = randomUUID();
  const triggerB = randomUUID();
  const made: string[] = []; // trigger jobs, oldest first
  let updateJobId: string;
  let rejectedId: string;
  beforeAll(async () => {
    t = await startTestCoordinator();
    agent = await enrollTestAgent(t.owner, t.orgId);
    member = (await addUser(t.owner, t.orgId, 'member@example.test')).client;
    stranger = await outsider(t.owner, t.orgId, 'stranger@example.test');
    for (let i = 0; i < 7; i++) made.push(createTestJob(t, agent, { triggerId: i % 2 ? triggerB : triggerA }).id);
    rejectedId = createTestJob(t, agent, {
      triggerId: triggerA,
      status: 'rejected',
      errorMessage: 'rate limited',
      forced: false,
    }).id;
    made.push(rejectedId);
    updateJobId = createTestJob(t, agent, { kind: 'update', triggerId: null, workflowName: 'update-app' }).id;
    const forced = createTestJob(t, agent, { triggerId: triggerB, forced: true, forceReason: 'hotfix' });
    made.push(forced.id);
    await agent.request('POST', `/v1/agent/jobs/${forced.id}/finish`, finishBody({ output: { ok: true } }));
  });
  afterAll(() => t?.close());

  it('lists trigger jobs newest first with the documented fields, never update jobs', async () => {
    const res = await t.owner.get(`/orgs/${t.orgId}/jobs`);
    expect(res.status).toBe(200);
    expect(res.body.map((j: { id: string }) => j.id)).toEqual([...made].reverse());
    expect(res.headers.get('x-next-cursor')).toBeNull();
    for (const j of res.body) expect(Object.keys(j).sort()).toEqual(LIST_FIELDS);
    expect(res.body[0]).toMatchObject({ forced: true, forceReason: 'hotfix', status: 'success', output: { ok: true } });
    expect(res.body.some((j: { id: string }) => j.id === updateJobId)).toBe(false);
  });

  it('filters by status and by trigger', async () => {
    const rejected = await t.owner.get(`/orgs/${t.orgId}/jobs?status=rejected`);
    expect(rejected.body.map((j: { id: string }) => j.id)).toEqual([rejectedId]);
    expect(rejected.body[0]).toMatchObject({ errorMessage: 'rate limited', finishedAt: expect.any(String) });
    const b = await t.owner.get(`/orgs/${t.orgId}/jobs?triggerId=${triggerB}`);
    expect(b.body.every((j: { triggerId: string }) => j.triggerId === triggerB)).toBe(true);
    expect(b.body).toHaveLength(4);
    const both = await t.owner.get(`/orgs/${t.orgId}/jobs?triggerId=${triggerA}&status=pending`);
    expect(both.body).toHaveLength(4);
    expect((await t.owner.get(`/orgs/${t.orgId}/jobs?triggerId=${randomUUID()}`)).body).toEqual([]);
  });

  it('pages with limit and the x-next-cursor header, covering every job exactly once', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const query: string = cursor === null ? 'limit=4' : `limit=4&cursor=${encodeURIComponent(cursor)}`;
      const res = await member.get(`/orgs/${t.orgId}/jobs?${query}`);
      expect(res.status).toBe(200);
      seen.push(...res.body.map((j: { id: string }) => j.id));
      cursor = res.headers.get('x-next-cursor');
      pages++;
    } while (cursor !== null && pages < 10);
    expect(pages).toBe(3);
    expect(seen).toEqual([...made].reverse());
  });

  it('refuses bad query parameters with 422', async () => {
    for (const query of [
      'limit=0',
      'limit=201',
      'limit=ten',
      'status=done',
      'triggerId=nope',
      'cursor=abc',
      'cursor=0',
      `cursor=${'9'.repeat(33)}`,
      'other=1',
    ]) {
      const res = await t.owner.get(`/orgs/${t.orgId}/jobs?${query}`);
      expect(res.status, query).toBe(422);
      expect(res.body, query).toMatchObject({ statusCode: 422, code: 'validation_failed' });
    }
  });

  it("keeps an organization's jobs from non-members and from unauthenticated callers", async () => {
    expect((await stranger.client.get(`/orgs/${t.orgId}/jobs`)).status).toBe(404);
    expect((await stranger.client.get(`/orgs/${stranger.orgId}/jobs`)).body).toEqual([]);
    expect((await t.api.get(`/orgs/${t.orgId}/jobs`)).status).toBe(401);
    expect((await stranger.client.get(`/jobs/${made[0]}`)).status).toBe(404);
    expect((await t.api.get(`/jobs/${made[0]}`)).status).toBe(401);
  });

  it('shows any job of the caller’s organizations, update jobs included, to any member', async () => {
    const res = await member.get(`/jobs/${updateJobId}`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: updateJobId, kind: 'update', triggerId: null, workflowName: 'update-app' });
  });

  it('answers 404 for an unknown job and for an id that is not a UUID', async () => {
    const unknown = await t.owner.get(`/jobs/${randomUUID()}`);
    expect(unknown.status).toBe(404);
    expect(unknown.body).toMatchObject({ code: 'not_found', message: 'Job not found' });
    expect((await t.owner.get('/jobs/not-a-uuid')).status).toBe(404);
  });

  it('renders the job detail at the statusUrl address /api/jobs/:id for a signed-in user only', async () => {
    const origin = t.url;
    const session = t.owner.token!;
    const v1 = await t.owner.get(`/jobs/${made[0]}`);
    const page = await fetch(`${origin}/api/jobs/${made[0]}`, { headers: { authorization: `Bearer ${session}` } });
    expect(page.status).toBe(200);
    expect(await page.json()).toEqual(v1.body);
    const anonymous = await fetch(`${origin}/api/jobs/${made[0]}`);
    expect(anonymous.status).toBe(401);
    const token = await fetch(`${origin}/api/jobs/${made[0]}`, {
      headers: { authorization: `Bearer drv_${'a'.repeat(43)}` },
    });
    expect(token.status).toBe(401);
    const foreign = await fetch(`${origin}/api/jobs/${made[0]}`, {
      headers: { authorization: `Bearer ${stranger.client.token}` },
    });
    expect(foreign.status).toBe(404);
  });
});

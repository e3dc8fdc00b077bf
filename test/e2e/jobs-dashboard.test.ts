import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enrollTestAgent, type TestAgent } from '../helpers/agent.js';
import { startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import type { ApiClient } from '../helpers/http.js';
import { createTestJob, finishBody } from '../helpers/jobs.js';
import { addUser, outsider } from '../helpers/members.js';

const LIST_FIELDS = [
  'agentId',
  'batchId',
  'cancelRequestedAt',
  'chatOrigin',
  'createdAt',
  'debug',
  'errorMessage',
  'exitCode',
  'finishedAt',
  'forceReason',
  'forced',
  'id',
  'kind',
  'number',
  'orgId',
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
    for (let i = 0; i < 7; i++)
      made.push((await createTestJob(t, agent, { triggerId: i % 2 ? triggerB : triggerA })).id);
    rejectedId = (
      await createTestJob(t, agent, {
        triggerId: triggerA,
        status: 'rejected',
        errorMessage: 'rate limited',
        forced: false,
      })
    ).id;
    made.push(rejectedId);
    updateJobId = (await createTestJob(t, agent, { kind: 'update', triggerId: null, workflowName: 'update-app' })).id;
    const forced = await createTestJob(t, agent, { triggerId: triggerB, forced: true, forceReason: 'hotfix' });
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
    // Numbered in creation order; the update job made before took a number too.
    const numbers = res.body.map((j: { number: number }) => j.number);
    expect(numbers).toEqual([...numbers].sort((a, b) => b - a));
    expect(new Set(numbers).size).toBe(numbers.length);
    const update = await t.owner.get(`/jobs/${updateJobId}`);
    expect(numbers).not.toContain(update.body.number);
    expect(update.body.number).toBeGreaterThan(0);
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
    expect(res.body).toMatchObject({
      id: updateJobId,
      orgId: t.orgId,
      kind: 'update',
      triggerId: null,
      workflowName: 'update-app',
    });
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

  // Last in this group: it ends some of the jobs above.
  it('sums the organization up for any member in one overview: agents, jobs an hour at a time, failures, running', async () => {
    const [failedId, runningId] = [made[0]!, made[1]!];
    await agent.request('POST', `/v1/agent/jobs/${failedId}/finish`, finishBody({ status: 'failed', exitCode: 1 }));
    await agent.request('POST', `/v1/agent/jobs/${runningId}/start`, {});
    const hourNow = () => new Date(Math.floor(Date.now() / 3_600_000) * 3_600_000).toISOString();
    const before = hourNow();
    const res = await member.get(`/orgs/${t.orgId}/overview`);
    expect(res.status).toBe(200);
    const { agents, jobs, running, recentFailures, rollouts, nextCronRuns } = res.body;
    expect(Object.values(agents).reduce((a: number, b) => a + (b as number), 0)).toBe(1);
    expect(agents.revoked).toBe(0);
    expect(jobs.buckets).toHaveLength(24);
    expect([before, hourNow()]).toContain(jobs.buckets.at(-1).start); // the hour under way
    const sum = (outcome: string) => jobs.buckets.reduce((n: number, b: Record<string, number>) => n + b[outcome]!, 0);
    // Every trigger job of the test (never the update job); those ended by outcome.
    expect(jobs.total).toBe(made.length);
    expect([sum('success'), sum('failed'), sum('rejected'), sum('timed_out'), sum('cancelled')]).toEqual([
      1, 1, 1, 0, 0,
    ]);
    expect(running.map((j: { id: string }) => j.id)).toEqual([runningId]);
    expect(recentFailures).toHaveLength(1);
    expect(recentFailures[0]).toMatchObject({
      id: failedId,
      status: 'failed',
      agentId: agent.agentId,
      triggerName: null,
    });
    expect(recentFailures[0].agentName).toEqual(expect.any(String));
    expect(Object.keys(recentFailures[0]).sort()).toEqual([...LIST_FIELDS, 'agentName', 'triggerName'].sort());
    expect([rollouts, nextCronRuns]).toEqual([[], []]);

    expect((await member.get(`/orgs/${t.orgId}/overview?hours=1`)).body.jobs.buckets).toHaveLength(1);
    expect((await member.get(`/orgs/${t.orgId}/overview?hours=168`)).body.jobs.buckets).toHaveLength(168);
    for (const query of ['hours=0', 'hours=169', 'hours=1.5', 'hours=day', 'other=1']) {
      const bad = await member.get(`/orgs/${t.orgId}/overview?${query}`);
      expect(bad.status, query).toBe(422);
      expect(bad.body, query).toMatchObject({ statusCode: 422, code: 'validation_failed' });
    }
    expect((await member.get(`/orgs/${t.orgId}/overview?hours=169`)).body).toEqual({
      statusCode: 422,
      code: 'validation_failed',
      message: 'querystring.hours must be at most 168',
      details: [{ path: 'querystring.hours', message: 'must be at most 168' }],
    });
    expect((await stranger.client.get(`/orgs/${t.orgId}/overview`)).status).toBe(404);
    expect((await t.api.get(`/orgs/${t.orgId}/overview`)).status).toBe(401);
  });
});

describe('dashboard job list filters: agent, source, creation time', () => {
  let t: TestCoordinator;
  let agentA: TestAgent;
  let agentB: TestAgent;
  const trigger = randomUUID();
  const at = (minute: number) => `2026-03-01T10:${String(minute).padStart(2, '0')}:00.000Z`;
  // Oldest first: [agent, source, minute of creation].
  const plan = [
    ['A', 'webhook', 0],
    ['B', 'cron', 1],
    ['A', 'manual', 2],
    ['B', 'webhook', 3],
    ['B', 'manual', 4],
    ['A', 'cron', 5],
    ['B', 'manual', 6],
  ] as const;
  const made: { id: string; agent: 'A' | 'B'; source: string; minute: number }[] = [];
  const ids = (body: { id: string }[]) => body.map((j) => j.id);
  const expected = (keep: (j: (typeof made)[number]) => boolean) =>
    made
      .filter(keep)
      .map((j) => j.id)
      .reverse();
  beforeAll(async () => {
    t = await startTestCoordinator();
    agentA = await enrollTestAgent(t.owner, t.orgId);
    agentB = await enrollTestAgent(t.owner, t.orgId);
    for (const [agent, source, minute] of plan) {
      const job = await createTestJob(t, agent === 'A' ? agentA : agentB, {
        triggerId: trigger,
        source,
        createdAt: at(minute),
      });
      made.push({ id: job.id, agent, source, minute });
    }
  });
  afterAll(() => t?.close());

  it('filters by agent, alone and with the trigger and status filters', async () => {
    const b = await t.owner.get(`/orgs/${t.orgId}/jobs?agentId=${agentB.agentId}`);
    expect(b.status).toBe(200);
    expect(ids(b.body)).toEqual(expected((j) => j.agent === 'B'));
    const withTrigger = await t.owner.get(`/orgs/${t.orgId}/jobs?agentId=${agentA.agentId}&triggerId=${trigger}`);
    expect(ids(withTrigger.body)).toEqual(expected((j) => j.agent === 'A'));
    const withStatus = await t.owner.get(`/orgs/${t.orgId}/jobs?agentId=${agentA.agentId}&status=success`);
    expect(withStatus.body).toEqual([]);
    expect((await t.owner.get(`/orgs/${t.orgId}/jobs?agentId=${randomUUID()}`)).body).toEqual([]);
  });

  it('filters by source, and by source and agent together', async () => {
    const manual = await t.owner.get(`/orgs/${t.orgId}/jobs?source=manual`);
    expect(ids(manual.body)).toEqual(expected((j) => j.source === 'manual'));
    expect(manual.body.every((j: { source: string }) => j.source === 'manual')).toBe(true);
    const bManual = await t.owner.get(`/orgs/${t.orgId}/jobs?source=manual&agentId=${agentB.agentId}`);
    expect(ids(bManual.body)).toEqual(expected((j) => j.source === 'manual' && j.agent === 'B'));
    expect((await t.owner.get(`/orgs/${t.orgId}/jobs?source=slack`)).body).toEqual([]);
  });

  it('filters by creation time: createdAfter inclusive, createdBefore exclusive, any offset', async () => {
    const after = await t.owner.get(`/orgs/${t.orgId}/jobs?createdAfter=${encodeURIComponent(at(4))}`);
    expect(ids(after.body)).toEqual(expected((j) => j.minute >= 4));
    const before = await t.owner.get(`/orgs/${t.orgId}/jobs?createdBefore=${encodeURIComponent(at(2))}`);
    expect(ids(before.body)).toEqual(expected((j) => j.minute < 2));
    // 11:02+01:00 is 10:02Z; 10:05 in UTC.
    const range = await t.owner.get(
      `/orgs/${t.orgId}/jobs?createdAfter=${encodeURIComponent('2026-03-01T11:02:00+01:00')}` +
        `&createdBefore=${encodeURIComponent('2026-03-01T10:05:00Z')}&source=manual`,
    );
    expect(ids(range.body)).toEqual(expected((j) => j.minute >= 2 && j.minute < 5 && j.source === 'manual'));
  });

  it('pages a filtered list with the cursor, covering every matching job exactly once', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const query: string = `agentId=${agentB.agentId}&limit=2${cursor === null ? '' : `&cursor=${cursor}`}`;
      const res = await t.owner.get(`/orgs/${t.orgId}/jobs?${query}`);
      expect(res.status).toBe(200);
      seen.push(...ids(res.body));
      cursor = res.headers.get('x-next-cursor');
      pages++;
    } while (cursor !== null && pages < 10);
    expect(pages).toBe(2);
    expect(seen).toEqual(expected((j) => j.agent === 'B'));
  });

  it('refuses bad filters with 422 and says which one', async () => {
    const cases: [string, string][] = [
      ['agentId=nope', 'querystring.agentId'],
      ['source=ota', 'querystring.source'],
      ['source=email', 'querystring.source'],
      ['createdAfter=yesterday', 'querystring.createdAfter'],
      ['createdAfter=2026-03-01T10:00:00', 'querystring.createdAfter'],
      ['createdBefore=2026-02-30T10:00:00Z', 'querystring.createdBefore'],
      ['createdAfter=2026-12-31T23:59:60Z', 'querystring.createdAfter'],
      [
        `createdAfter=${encodeURIComponent(at(3))}&createdBefore=${encodeURIComponent(at(3))}`,
        'querystring.createdBefore',
      ],
      [
        `createdAfter=${encodeURIComponent(at(5))}&createdBefore=${encodeURIComponent(at(1))}`,
        'querystring.createdBefore',
      ],
    ];
    for (const [query, path] of cases) {
      const res = await t.owner.get(`/orgs/${t.orgId}/jobs?${query}`);
      expect(res.status, query).toBe(422);
      expect(res.body, query).toMatchObject({
        code: 'validation_failed',
        details: [expect.objectContaining({ path })],
      });
    }
  });

  it("keeps another organization's agent filter empty", async () => {
    const stranger = await outsider(t.owner, t.orgId, 'filters-stranger@example.test');
    const res = await stranger.client.get(`/orgs/${stranger.orgId}/jobs?agentId=${agentA.agentId}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual([]);
  });
});

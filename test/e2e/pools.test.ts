import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enrollTestAgent, workflow, type TestAgent } from '../helpers/agent.js';
import { startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import type { ApiClient } from '../helpers/http.js';
import { finishBody } from '../helpers/jobs.js';
import { eventually } from '../helpers/poll.js';
import { openAgentStream, type AgentStream } from '../helpers/sse.js';
import { issueApiToken } from '../helpers/tokens.js';

/**
 * Pools (docs/fleets.md, "Pools"): a `fanout: one` trigger's job goes to the least busy connected
 * agent its selector matches that has room in its queue; with none, it waits without an agent,
 * and the first matching agent to free a place or to connect takes it, once. Real coordinator,
 * signed agent clients holding real streams.
 */
describe('pools', () => {
  let t: TestCoordinator;
  let a: TestAgent;
  let b: TestAgent;
  let late: TestAgent;
  let caller: ApiClient;
  let pool: string;
  const streams: AgentStream[] = [];

  const open = async (agent: TestAgent, capacity: number) => {
    const stream = await openAgentStream(t.url, agent, { path: `/v1/agent/stream?capacity=${capacity}` });
    expect(stream.status).toBe(200);
    streams.push(stream);
    return stream;
  };
  const finish = async (agent: TestAgent, jobId: string) => {
    for (const [step, body] of [['accept'], ['start'], ['finish', finishBody()]] as const) {
      const res = await agent.request('POST', `/v1/agent/jobs/${jobId}/${step}`, body);
      expect(res.status, res.text).toBe(200);
    }
  };
  const job = async (id: string) => (await t.owner.get(`/jobs/${id}`)).body;
  /** An async `fanout: one` trigger of the workflow `build` on `selector`, and a caller whose token may run it. */
  const poolTrigger = async (name: string, selector: string) => {
    const res = await t.owner.post(`/orgs/${t.orgId}/triggers`, {
      body: {
        name,
        agentSelector: selector,
        fanout: 'one',
        scopeType: 'workflow',
        workflowName: 'build',
        responseMode: 'async',
      },
    });
    expect(res.status, res.text).toBe(201);
    const token = await issueApiToken(t.owner, t.orgId, [{ type: 'trigger', triggerIds: [res.body.id] }]);
    return { id: res.body.id as string, caller: t.api.withToken(token.token) };
  };

  beforeAll(async () => {
    // A dropped stream makes its agent disconnected at once: the second case needs none connected.
    t = await startTestCoordinator({ env: { DROVER_AGENT_DISCONNECT_GRACE_MS: '0', DROVER_STREAM_PING_MS: '250' } });
    const builder = async (role: string) => {
      const agent = await enrollTestAgent(t.owner, t.orgId);
      await agent.request('PUT', '/v1/agent/labels', { labels: { os: 'linux', arch: 'x64', role } });
      await agent.putWorkflows([workflow('build')]);
      return agent;
    };
    a = await builder('builder');
    b = await builder('builder');
    late = await builder('builder');
    await builder('tester');
    ({ id: pool, caller } = await poolTrigger('any builder', 'role=builder'));
  });
  afterAll(async () => {
    for (const s of streams) s.close();
    await t?.close();
  });

  it('gives each call to the least busy agent with room, lets the rest wait, and the first agent with room takes them', async () => {
    const streamA = await open(a, 1);
    const streamB = await open(b, 1);
    await eventually(
      async () => (await t.owner.get(`/orgs/${t.orgId}/agents/${b.agentId}`)).body.status === 'connected',
    );
    const first = await caller.post(`/triggers/${pool}/run`);
    expect(first.status, first.text).toBe(202);
    expect(first.body.agentId).toBeDefined();
    const second = await caller.post(`/triggers/${pool}/run`);
    // The other agent: the first one's queue (capacity 1) is full.
    expect(second.body.agentId).toBe(first.body.agentId === a.agentId ? b.agentId : a.agentId);
    const third = await caller.post(`/triggers/${pool}/run`);
    expect(third.status).toBe(202);
    expect(third.body.agentId).toBeUndefined();
    expect(await job(third.body.jobId)).toMatchObject({ status: 'pending', agentId: null });

    const streamOf = (agentId: string) => (agentId === a.agentId ? streamA : streamB);
    const agentOf = (agentId: string) => (agentId === a.agentId ? a : b);
    expect((await streamOf(first.body.agentId).nextJob()).jobId).toBe(first.body.jobId);
    expect((await streamOf(second.body.agentId).nextJob()).jobId).toBe(second.body.jobId);
    // The first agent to free its place takes the waiting job.
    await finish(agentOf(second.body.agentId), second.body.jobId);
    expect((await streamOf(second.body.agentId).nextJob()).jobId).toBe(third.body.jobId);
    expect(await job(third.body.jobId)).toMatchObject({ agentId: second.body.agentId, status: 'pending' });
    await finish(agentOf(second.body.agentId), third.body.jobId);
    await finish(agentOf(first.body.agentId), first.body.jobId);
    streamA.close();
    streamB.close();
  });

  it('keeps a job for the first matching agent that connects, never one the selector leaves out', async () => {
    await eventually(async () => {
      const agents = (await t.owner.get(`/orgs/${t.orgId}/agents`)).body as { status: string }[];
      return agents.every((agent) => agent.status !== 'connected');
    });
    const waiting = await caller.post(`/triggers/${pool}/run`);
    expect(waiting.body.agentId).toBeUndefined();
    const stream = await open(late, 2);
    expect((await stream.nextJob()).jobId).toBe(waiting.body.jobId);
    expect(await job(waiting.body.jobId)).toMatchObject({ agentId: late.agentId });
    // A cancel reaches a job waiting in the pool too.
    stream.close();
    await eventually(
      async () => (await t.owner.get(`/orgs/${t.orgId}/agents/${late.agentId}`)).body.status !== 'connected',
      20_000,
    );
    const cancelled = await caller.post(`/triggers/${pool}/run`);
    expect(cancelled.body.agentId).toBeUndefined();
    const res = await t.owner.post(`/jobs/${cancelled.body.jobId}/cancel`);
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ status: 'cancelled', agentId: null });
    // A cancel that read the job waiting in the pool while a claim gave it to an agent cancels it
    // as it is now (it was a 404, and the job then ran).
    const claimed = await caller.post(`/triggers/${pool}/run`);
    const read = (await t.coordinator.ctx.repos.jobs.findById(claimed.body.jobId))!;
    expect(read.agentId).toBeNull();
    await t.sql.run('UPDATE jobs SET agent_id = ? WHERE id = ?', late.agentId, claimed.body.jobId); // the claim
    const raced = await t.coordinator.ctx.cancels.cancelJob(read);
    expect(raced).toMatchObject({ outcome: 'applied', job: { status: 'cancelled', agentId: late.agentId } });

    // A schedule's occurrence of a pool trigger makes one job of the pool, waiting here.
    const cron = await t.owner.post(`/orgs/${t.orgId}/triggers`, {
      body: {
        name: 'nightly build',
        type: 'cron',
        cronExpression: '0 3 * * *',
        agentSelector: 'role=builder',
        fanout: 'one',
        scopeType: 'workflow',
        workflowName: 'build',
      },
    });
    expect(cron.status, cron.text).toBe(201);
    const fired = await t.coordinator.ctx.runs.runOccurrence({
      orgId: t.orgId,
      triggerId: cron.body.id,
      scheduledAt: '2026-11-28T03:00:00.000Z',
      stillDue: () => true,
    });
    expect(fired).toMatchObject({ outcome: 'job_created', status: 'pending' });
    expect(await job((fired as { jobId: string }).jobId)).toMatchObject({ source: 'cron', agentId: null });
  });

  it('cancels the jobs waiting in a pool when its trigger is moved onto one agent: none could ever take them', async () => {
    const testers = await poolTrigger('any tester', 'role=tester'); // its one agent never connects here
    const waiting = await testers.caller.post(`/triggers/${testers.id}/run`);
    expect(waiting.status, waiting.text).toBe(202);
    expect(await job(waiting.body.jobId)).toMatchObject({ status: 'pending', agentId: null });
    // Another pool's waiting job is not this trigger's.
    const other = await caller.post(`/triggers/${pool}/run`);
    expect(await job(other.body.jobId)).toMatchObject({ status: 'pending', agentId: null });

    const moved = await t.owner.patch(`/orgs/${t.orgId}/triggers/${testers.id}`, { body: { agentId: a.agentId } });
    expect(moved.status, moved.text).toBe(200);
    expect(moved.body.agentSelector).toBeNull();
    expect(await job(waiting.body.jobId)).toMatchObject({ status: 'cancelled', agentId: null });
    expect(await job(other.body.jobId)).toMatchObject({ status: 'pending', agentId: null });
    const audit = (await t.owner.get(`/orgs/${t.orgId}/audit?limit=5`)).body as {
      action: string;
      metadata: Record<string, unknown>;
    }[];
    expect(audit.find((e) => e.action === 'trigger.update')?.metadata).toMatchObject({ cancelledWaiting: 1 });
    expect((await t.owner.post(`/jobs/${other.body.jobId}/cancel`)).status).toBe(200);
  });

  it('puts the jobs a disconnected agent had not started back in the pool, where its late reports no longer reach them', async () => {
    const packer = async () => {
      const agent = await enrollTestAgent(t.owner, t.orgId);
      const labelled = await agent.request('PUT', '/v1/agent/labels', {
        labels: { os: 'linux', arch: 'x64', role: 'packer' },
      });
      expect(labelled.status, labelled.text).toBe(200);
      await agent.putWorkflows([workflow('build')]);
      return agent;
    };
    const [gone, other] = [await packer(), await packer()];
    const packers = await poolTrigger('any packer', 'role=packer');
    const goneStream = await open(gone, 2);
    await eventually(
      async () => (await t.owner.get(`/orgs/${t.orgId}/agents/${gone.agentId}`)).body.status === 'connected',
    );
    const run = async () => {
      const res = await packers.caller.post(`/triggers/${packers.id}/run`);
      expect(res.status, res.text).toBe(202);
      return res.body.jobId as string;
    };
    const handed = await run();
    const accepted = await run();
    expect(await job(handed)).toMatchObject({ agentId: gone.agentId });
    expect((await goneStream.nextJob()).jobId).toBe(handed);
    expect((await goneStream.nextJob()).jobId).toBe(accepted);
    expect((await gone.request('POST', `/v1/agent/jobs/${accepted}/accept`)).status).toBe(200);

    goneStream.close();
    await eventually(async () => (await job(accepted)).agentId === null && (await job(handed)).agentId === null);
    expect(await job(accepted)).toMatchObject({ status: 'pending', agentId: null, queuedAt: null });
    // Its start, sent when it is back, finds a job no longer its own: it does not run it.
    expect((await gone.request('POST', `/v1/agent/jobs/${accepted}/start`)).status).toBe(404);
    const otherStream = await open(other, 2);
    expect(new Set([(await otherStream.nextJob()).jobId, (await otherStream.nextJob()).jobId])).toEqual(
      new Set([handed, accepted]),
    );
    await finish(other, handed);
    await finish(other, accepted);
  });
});

/**
 * A pool whose agents run different versions of the workflow (docs/fleets.md, "Pools"): the job
 * an agent gets carries the params and the timeout of that agent's version, and never goes to an
 * agent whose version would refuse its params, at the call or when it waits in the pool.
 */
describe('pools over versions of a workflow', () => {
  let t: TestCoordinator;
  let caller: ApiClient;
  let pool: string;
  const streams: AgentStream[] = [];
  afterAll(async () => {
    for (const s of streams) s.close();
    await t?.close();
  });
  const agent = async (name: string, version: ReturnType<typeof workflow>) => {
    const a = await enrollTestAgent(t.owner, t.orgId, { hostname: name });
    expect((await t.owner.patch(`/orgs/${t.orgId}/agents/${a.agentId}`, { body: { name } })).status).toBe(200);
    await a.request('PUT', '/v1/agent/labels', { labels: { os: 'linux', arch: 'x64', role: 'builder' } });
    await a.putWorkflows([version]);
    return a;
  };
  const open = async (a: TestAgent, capacity: number) => {
    const stream = await openAgentStream(t.url, a, { path: `/v1/agent/stream?capacity=${capacity}` });
    expect(stream.status).toBe(200);
    streams.push(stream);
    await eventually(
      async () => (await t.owner.get(`/orgs/${t.orgId}/agents/${a.agentId}`)).body.status === 'connected',
    );
    return stream;
  };
  /** The job, with the timeout it was given (the API does not show it). */
  const job = async (id: string) => ({
    ...(await t.owner.get(`/jobs/${id}`)).body,
    timeoutMs: (await t.sql.get<{ timeout_ms: number | null }>('SELECT timeout_ms FROM jobs WHERE id = ?', id))!
      .timeout_ms,
  });

  beforeAll(async () => {
    t = await startTestCoordinator();
    const res = await t.owner.post(`/orgs/${t.orgId}/triggers`, {
      body: {
        name: 'deploy anywhere',
        agentSelector: 'role=builder',
        fanout: 'one',
        scopeType: 'workflow',
        workflowName: 'deploy',
        responseMode: 'async',
      },
    });
    expect(res.status, res.text).toBe(201);
    pool = res.body.id;
    caller = t.api.withToken((await issueApiToken(t.owner, t.orgId, [{ type: 'trigger', triggerIds: [pool] }])).token);
  });

  it("gives an agent the job with its own version's defaults and timeout, never one its version refuses", async () => {
    // b-new (first by name: the version the params are checked against) declares `days`, 90 by
    // default, and a timeout of a minute; c-old declares no params and an hour; d-any takes any
    // params, two minutes.
    const current = workflow('deploy', {
      paramsSchema: [{ name: 'days', type: 'number', default: 90 }],
      timeout: 60_000,
    });
    const old = workflow('deploy', { paramsSchema: [], timeout: 3_600_000 });
    const untyped = workflow('deploy', { paramsSchema: null, timeout: 120_000 });
    const bNew = await agent('b-new', current);
    const cOld = await agent('c-old', old);
    const dAny = await agent('d-any', untyped);
    const newStream = await open(bNew, 1);
    const oldStream = await open(cOld, 4);

    // c-old has the most room: it gets the job as its version makes it, without b-new's `days`.
    const plain = await caller.post(`/triggers/${pool}/run`, { body: {} });
    expect(plain.body.agentId).toBe(cOld.agentId);
    expect((await oldStream.nextJob()).jobId).toBe(plain.body.jobId);
    expect(await job(plain.body.jobId)).toMatchObject({ params: {}, timeoutMs: 3_600_000 });

    // `days` given: c-old's version refuses it, so the job goes to b-new, with b-new's timeout.
    const days = { body: { params: { days: 30 } } };
    const given = await caller.post(`/triggers/${pool}/run`, days);
    expect(given.body.agentId).toBe(bNew.agentId);
    expect((await newStream.nextJob()).jobId).toBe(given.body.jobId);
    expect(await job(given.body.jobId)).toMatchObject({ params: { days: 30 }, timeoutMs: 60_000 });

    // b-new is full: the next one waits in the pool rather than go to c-old, which has room.
    const waiting = await caller.post(`/triggers/${pool}/run`, days);
    expect(waiting.status, waiting.text).toBe(202);
    expect(waiting.body.agentId).toBeUndefined();
    expect(await job(waiting.body.jobId)).toMatchObject({ status: 'pending', agentId: null });

    // d-any's version takes any params: it takes the waiting job, with its own timeout.
    const anyStream = await open(dAny, 4);
    expect((await anyStream.nextJob()).jobId).toBe(waiting.body.jobId);
    expect(await job(waiting.body.jobId)).toMatchObject({
      agentId: dAny.agentId,
      params: { days: 30 },
      timeoutMs: 120_000,
    });
  });
});

import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { signRequest } from '@drover/shared';
import { createHash } from 'node:crypto';
import { enrollTestAgent, workflow, type TestAgent } from '../helpers/agent.js';
import { makeTempDir, startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import { createTestJob, finishBody } from '../helpers/jobs.js';
import { eventually, sleep } from '../helpers/poll.js';
import { openAgentStream, type AgentStream } from '../helpers/sse.js';

const PING_MS = 100;
const GRACE_MS = 400;

interface AgentView {
  status: string;
  lastSeenAt: string | null;
  agentVersion: string;
}

describe('agent stream', () => {
  let t: TestCoordinator;
  const streams: AgentStream[] = [];
  beforeAll(async () => {
    t = await startTestCoordinator({
      env: { DROVER_STREAM_PING_MS: String(PING_MS), DROVER_AGENT_DISCONNECT_GRACE_MS: String(GRACE_MS) },
    });
  });
  afterAll(() => t?.close());
  afterEach(() => {
    for (const s of streams.splice(0)) s.close();
  });

  const open = async (agent: TestAgent) => {
    const s = await openAgentStream(t.url, agent);
    streams.push(s);
    return s;
  };
  const agentView = async (agent: TestAgent) =>
    (await t.owner.get<AgentView>(`/orgs/${t.orgId}/agents/${agent.agentId}`)).body;
  const statusIs = (agent: TestAgent, status: string) =>
    eventually(async () => (await agentView(agent)).status === status);
  /**
   * A connected agent, the witness that the disconnect grace ran out: `graceRanOut` drops its
   * stream and waits until it shows `disconnected`; by then the grace has run out for every
   * stream that dropped before (the timers fire in order), without waiting a fixed time.
   */
  async function graceWitness(): Promise<{ graceRanOut(): Promise<void> }> {
    const w = await enrollTestAgent(t.owner, t.orgId);
    const s = await open(w);
    await statusIs(w, 'connected');
    return {
      async graceRanOut() {
        s.close();
        await statusIs(w, 'disconnected');
      },
    };
  }

  it('answers with an event stream and turns a pending agent connected', async () => {
    const agent = await enrollTestAgent(t.owner, t.orgId);
    expect((await agentView(agent)).status).toBe('pending');
    const s = await open(agent);
    expect(s.status).toBe(200);
    expect(s.headers.get('content-type')).toBe('text/event-stream');
    expect(s.headers.get('cache-control')).toBe('no-cache');
    expect(s.headers.get('x-accel-buffering')).toBe('no');
    expect(s.headers.get('x-request-id')).toBeTruthy();
    await statusIs(agent, 'connected');
    expect((await agentView(agent)).lastSeenAt).not.toBeNull();
  });

  it('sends pings with a ping-<ms> id and moves lastSeenAt with them', async () => {
    const agent = await enrollTestAgent(t.owner, t.orgId);
    const s = await open(agent);
    const ping = await s.next((e) => e.event === 'ping');
    expect(ping.id).toMatch(/^ping-\d+$/);
    const data = JSON.parse(ping.data) as { at: string };
    expect(Number(ping.id!.slice(5))).toBe(Date.parse(data.at));
    const first = (await agentView(agent)).lastSeenAt!;
    await s.next((e) => e.event === 'ping');
    await s.next((e) => e.event === 'ping');
    await eventually(async () => Date.parse((await agentView(agent)).lastSeenAt!) > Date.parse(first));
    expect((await agentView(agent)).status).toBe('connected');
  });

  it("keeps the version the agent names when its stream opens as the agent's agentVersion", async () => {
    const agent = await enrollTestAgent(t.owner, t.orgId);
    const enrolled = (await agentView(agent)).agentVersion;
    (await open(agent)).close(); // no X-Agent-Version (an agent before it): unchanged
    await statusIs(agent, 'connected');
    expect((await agentView(agent)).agentVersion).toBe(enrolled);
    const s = await openAgentStream(t.url, agent, { headers: { 'x-agent-version': '0.2.0+build.7' } });
    streams.push(s);
    expect(s.status).toBe(200);
    await eventually(async () => (await agentView(agent)).agentVersion === '0.2.0+build.7');
  });

  it('opens the stream of an agent claiming the reports it holds, and refuses a claim it does not hold with 409', async () => {
    const agent = await enrollTestAgent(t.owner, t.orgId);
    const digest = (body: unknown) => createHash('sha256').update(JSON.stringify(body)).digest('hex');
    const claimed = (claim: string) => openAgentStream(t.url, agent, { path: `/v1/agent/stream?reports=${claim}` });
    const workflows = { workflows: [workflow('build')] };
    const labels = { labels: { arch: 'x64', os: 'linux' } };

    // Nothing reported yet: no claim holds.
    const before = await claimed(`${digest(workflows)}.${digest(labels)}`);
    expect(before.status).toBe(409);
    expect(JSON.parse(before.text!)).toMatchObject({ statusCode: 409, code: 'reports_outdated' });

    expect((await agent.request('PUT', '/v1/agent/workflows', workflows)).status).toBe(200);
    expect((await agent.request('PUT', '/v1/agent/labels', labels)).status).toBe(200);
    const held = await claimed(`${digest(workflows)}.${digest(labels)}`);
    streams.push(held);
    expect(held.status).toBe(200);
    expect(held.headers.get('x-agent-reports')).toBe('checked');
    await statusIs(agent, 'connected');
    held.close();

    // Another workflow set or other labels than the coordinator holds: refused before the stream opens.
    const otherSet = await claimed(`${digest({ workflows: [workflow('test')] })}.${digest(labels)}`);
    expect(otherSet.status).toBe(409);
    const otherLabels = await claimed(`${digest(workflows)}.${digest({ labels: { os: 'linux' } })}`);
    expect(otherLabels.status).toBe(409);
    // The digests are of the exact bytes received: the same set in other JSON is another report.
    const respaced = JSON.stringify(workflows, null, 1);
    expect((await agent.request('PUT', '/v1/agent/workflows', undefined, { rawBody: respaced })).status).toBe(200);
    expect((await claimed(`${digest(workflows)}.${digest(labels)}`)).status).toBe(409);
    const again = await claimed(`${createHash('sha256').update(respaced).digest('hex')}.${digest(labels)}`);
    streams.push(again);
    expect(again.status).toBe(200);

    const malformed = await claimed('abc.def');
    expect(malformed.status).toBe(422);
    expect(JSON.parse(malformed.text!)).toMatchObject({
      code: 'validation_failed',
      details: [{ path: 'querystring.reports', message: "must be two lowercase hex SHA-256 joined by '.'" }],
    });
  });

  it('refuses unsigned, badly signed and query-carrying stream requests without opening a stream', async () => {
    const agent = await enrollTestAgent(t.owner, t.orgId);
    const unsigned = await fetch(`${t.url}/v1/agent/stream`);
    expect(unsigned.status).toBe(401);
    expect(await unsigned.json()).toMatchObject({ statusCode: 401, code: 'unauthorized' });

    const other = await enrollTestAgent(t.owner, t.orgId);
    const forged = await openAgentStream(t.url, { agentId: agent.agentId, privateKey: other.privateKey });
    expect(forged.status).toBe(401);
    expect(JSON.parse(forged.text!)).toMatchObject({ code: 'unauthorized' });

    const withQuery = await openAgentStream(t.url, agent, { path: '/v1/agent/stream?since=1' });
    expect(withQuery.status).toBe(422);
    expect(JSON.parse(withQuery.text!)).toMatchObject({ code: 'validation_failed' });

    const badVersion = await openAgentStream(t.url, agent, { headers: { 'x-agent-version': 'x'.repeat(65) } });
    expect(badVersion.status).toBe(422);
    expect(JSON.parse(badVersion.text!)).toMatchObject({
      code: 'validation_failed',
      details: [{ path: 'headers.x-agent-version', message: 'must be 1 to 64 visible ASCII characters' }],
    });

    const head = await fetch(`${t.url}/v1/agent/stream`, {
      method: 'HEAD',
      headers: signRequest({
        agentId: agent.agentId,
        privateKey: agent.privateKey,
        method: 'HEAD',
        path: '/v1/agent/stream',
      }),
    });
    expect(head.status).toBe(405);
    expect(head.headers.get('allow')).toBe('GET');
    expect((await agentView(agent)).status).toBe('pending');
  });

  it('marks the agent disconnected once its stream has stayed down for the grace period', async () => {
    const agent = await enrollTestAgent(t.owner, t.orgId);
    const s = await open(agent);
    await statusIs(agent, 'connected');
    const droppedAt = Date.now();
    s.close();
    // Real time: the grace runs on the coordinator's own timer, halfway through it here.
    await sleep(GRACE_MS / 2);
    expect((await agentView(agent)).status).toBe('connected');
    await statusIs(agent, 'disconnected');
    expect(Date.now() - droppedAt).toBeGreaterThanOrEqual(GRACE_MS - 50);
    expect((await agentView(agent)).lastSeenAt).not.toBeNull();

    // And back to connected when it returns.
    await open(agent);
    await statusIs(agent, 'connected');
  });

  it('keeps the agent connected when it reconnects within the grace period', async () => {
    const agent = await enrollTestAgent(t.owner, t.orgId);
    const witness = await graceWitness();
    const first = await open(agent);
    await statusIs(agent, 'connected');
    first.close();
    // Real time: back a quarter of the grace later, on the coordinator's own timer.
    await sleep(GRACE_MS / 4);
    await open(agent);
    await witness.graceRanOut();
    expect((await agentView(agent)).status).toBe('connected');
  });

  it('closes the previous stream when the agent opens a second one', async () => {
    const agent = await enrollTestAgent(t.owner, t.orgId);
    const witness = await graceWitness();
    const first = await open(agent);
    await first.next((e) => e.event === 'ping');
    const second = await open(agent);
    await first.ended;
    await second.next((e) => e.event === 'ping');
    expect(second.isEnded).toBe(false);
    // The replaced stream's end does not start the disconnect timer.
    await witness.graceRanOut();
    expect((await agentView(agent)).status).toBe('connected');
    const job = await createTestJob(t, agent);
    expect((await second.nextJob()).jobId).toBe(job.id);
  });

  it("closes a revoked agent's stream at once and refuses its next one", async () => {
    const agent = await enrollTestAgent(t.owner, t.orgId);
    const witness = await graceWitness();
    const s = await open(agent);
    await statusIs(agent, 'connected');
    expect((await t.owner.delete(`/orgs/${t.orgId}/agents/${agent.agentId}`)).status).toBe(200);
    await s.ended;
    const again = await openAgentStream(t.url, agent);
    expect(again.status).toBe(401);
    await witness.graceRanOut();
    expect((await agentView(agent)).status).toBe('revoked');
  });

  it('delivers the open jobs on connect, oldest first, with their status, and never finished ones', async () => {
    const agent = await enrollTestAgent(t.owner, t.orgId);
    const pending = await createTestJob(t, agent, { workflowName: 'a', params: { n: 1 }, ref: null, debug: true });
    const queued = await createTestJob(t, agent, { workflowName: 'b', timeoutMs: null });
    const running = await createTestJob(t, agent, { workflowName: 'c' });
    const finished = await createTestJob(t, agent, { workflowName: 'd' });
    await createTestJob(t, agent, { workflowName: 'e', status: 'rejected', errorMessage: 'limit' });
    expect((await agent.request('POST', `/v1/agent/jobs/${queued.id}/accept`)).status).toBe(200);
    expect((await agent.request('POST', `/v1/agent/jobs/${running.id}/start`)).status).toBe(200);
    expect((await agent.request('POST', `/v1/agent/jobs/${finished.id}/finish`, finishBody())).status).toBe(200);

    const s = await open(agent);
    // A ping may come before the open jobs on a stream still starting: take three jobs, then a
    // ping after them, by which time a fourth (the finished job) would have come too.
    for (let i = 0; i < 3; i++) await s.next((e) => e.event === 'job');
    await s.next((e) => e.event === 'ping');
    const jobs = s.events.filter((e) => e.event === 'job');
    expect(jobs.map((e) => e.id)).toEqual([pending.id, queued.id, running.id]);
    expect(JSON.parse(jobs[0]!.data)).toEqual({
      jobId: pending.id,
      kind: 'trigger',
      workflowName: 'a',
      params: { n: 1 },
      ref: null,
      debug: true,
      timeoutMs: 60_000,
      status: 'pending',
      createdAt: pending.createdAt,
    });
    expect(jobs.map((e) => JSON.parse(e.data).status)).toEqual(['pending', 'queued', 'running']);
    expect(JSON.parse(jobs[1]!.data).timeoutMs).toBeNull();
  });

  it('pushes a job created while the agent is connected, and only to that agent', async () => {
    const agent = await enrollTestAgent(t.owner, t.orgId);
    const other = await enrollTestAgent(t.owner, t.orgId);
    const s = await open(agent);
    const o = await open(other);
    await s.next((e) => e.event === 'ping');
    await o.next((e) => e.event === 'ping');
    const job = await createTestJob(t, agent, { workflowName: 'live' });
    const received = await s.next((e) => e.event === 'job');
    expect(received.id).toBe(job.id);
    expect(JSON.parse(received.data)).toMatchObject({ jobId: job.id, workflowName: 'live', status: 'pending' });
    await o.next((e) => e.event === 'ping');
    await o.next((e) => e.event === 'ping');
    expect(o.events.some((e) => e.event === 'job')).toBe(false);
  });

  it('redelivers open jobs after a reconnect, each once, and leaves out those finished meanwhile', async () => {
    const agent = await enrollTestAgent(t.owner, t.orgId);
    const first = await open(agent);
    await first.next((e) => e.event === 'ping');
    const a = await createTestJob(t, agent);
    const b = await createTestJob(t, agent);
    expect((await first.nextJob()).jobId).toBe(a.id);
    expect((await first.nextJob()).jobId).toBe(b.id);
    first.close();
    expect((await agent.request('POST', `/v1/agent/jobs/${a.id}/finish`, finishBody())).status).toBe(200);
    const c = await createTestJob(t, agent); // created while no stream is open
    const second = await open(agent);
    await second.next((e) => e.event === 'ping');
    await second.next((e) => e.event === 'ping');
    expect(second.events.filter((e) => e.event === 'job').map((e) => e.id)).toEqual([b.id, c.id]);
  });
});

describe('agent stream at shutdown and restart', () => {
  it('ends open streams when the coordinator closes, and a restarted coordinator expires the stale connection', async () => {
    const dataDir = makeTempDir();
    // The grace outlasts the second coordinator's start and first request on a busy machine
    // (300 ms did not, once; 2 s did not at a load of 13 on 2 cores), so its "still connected"
    // view is not a race.
    const env = { DROVER_STREAM_PING_MS: '100', DROVER_AGENT_DISCONNECT_GRACE_MS: '5000' };
    const first = await startTestCoordinator({ dataDir, env });
    let second: TestCoordinator | undefined;
    try {
      const agent = await enrollTestAgent(first.owner, first.orgId);
      const s = await openAgentStream(first.url, agent);
      await s.next((e) => e.event === 'ping');
      const started = Date.now();
      await first.close();
      await s.ended;
      expect(Date.now() - started).toBeLessThan(5_000);

      second = await startTestCoordinator({ dataDir, env });
      const view = async () =>
        (await second!.owner.get<AgentView>(`/orgs/${second!.orgId}/agents/${agent.agentId}`)).body;
      expect((await view()).status).toBe('connected');
      await eventually(async () => (await view()).status === 'disconnected', 15_000);
    } finally {
      await first.close();
      await second?.close();
    }
  });
});

describe('a reconnect storm', () => {
  const METRICS_TOKEN = 'storm-metrics-token-0123456789';
  let t: TestCoordinator;
  beforeAll(async () => {
    // One stream open a second: the second open within the second is shed.
    t = await startTestCoordinator({ env: { DROVER_RECONNECT_BUDGET: '1', DROVER_METRICS_TOKEN: METRICS_TOKEN } });
  });
  afterAll(() => t?.close());

  it("sheds stream opens past the budget before their signature, with Retry-After, and hints the fleet's spread", async () => {
    const agent = await enrollTestAgent(t.owner, t.orgId);
    const other = await enrollTestAgent(t.owner, t.orgId);
    const path = '/v1/agent/stream';
    const controller = new AbortController();
    const admitted = await fetch(`${t.url}${path}`, {
      headers: signRequest({ agentId: agent.agentId, privateKey: agent.privateKey, method: 'GET', path }),
      signal: controller.signal,
    });
    expect(admitted.status).toBe(200);
    const reader = admitted.body!.getReader();
    let opening = '';
    while (!opening.includes('retry:')) opening += new TextDecoder().decode((await reader.read()).value);
    // One agent connected at one open a second: the smallest spread, a second.
    expect(opening).toContain('retry: 1000\n');
    controller.abort();

    const shed = await openAgentStream(t.url, other);
    expect(shed.status).toBe(503);
    expect(Number(shed.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(JSON.parse(shed.text!)).toMatchObject({ statusCode: 503, code: 'reconnect_shed' });
    // Before the signature: an unsigned open is shed too, not refused with 401.
    expect((await fetch(`${t.url}${path}`)).status).toBe(503);
    // The connect-time reports are refused while the budget is spent, without spending it.
    const report = await fetch(`${t.url}/v1/agent/workflows`, { method: 'PUT' });
    expect(report.status).toBe(503);
    expect(report.headers.get('retry-after')).toMatch(/^\d+$/);
    // Operators are not shed.
    expect((await t.owner.get(`/orgs/${t.orgId}/agents`)).status).toBe(200);
    const metrics = await fetch(`${t.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
    expect(await metrics.text()).toMatch(/^drover_agent_reconnects_shed_total 3$/m);
  });
});

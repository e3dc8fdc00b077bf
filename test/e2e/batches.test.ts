import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enrollTestAgent, workflow, type TestAgent } from '../helpers/agent.js';
import { auditEntries } from '../helpers/audit.js';
import { startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import type { ApiClient } from '../helpers/http.js';
import { finishBody } from '../helpers/jobs.js';
import { eventually } from '../helpers/poll.js';
import { issueApiToken } from '../helpers/tokens.js';

/**
 * Runs on many agents (docs/fleets.md, "Batches"): a `fanout: all` trigger on a label selector
 * makes one job per selected agent, grouped in a batch that counts once against the caller's
 * limits, holds its jobs past maxParallel, answers sync calls when every job ended, and cancels
 * as a whole. Real coordinator, signed agent clients.
 */
describe('batches', () => {
  let t: TestCoordinator;
  const agents: Record<string, TestAgent> = {};
  let caller: ApiClient;
  let callerToken: string;
  const triggers: Record<string, string> = {};

  const labels = (agent: TestAgent, extra: Record<string, string>) =>
    agent.request('PUT', '/v1/agent/labels', { labels: { os: 'linux', arch: 'x64', ...extra } });
  const move = (agent: TestAgent, jobId: string, step: string, body?: unknown) =>
    agent.request('POST', `/v1/agent/jobs/${jobId}/${step}`, body);
  const runAll = async (agent: TestAgent, jobId: string, status = 'success') => {
    expect((await move(agent, jobId, 'accept')).status).toBe(200);
    expect((await move(agent, jobId, 'start')).status).toBe(200);
    expect(
      (await move(agent, jobId, 'finish', finishBody({ status, exitCode: status === 'success' ? 0 : 1 }))).status,
    ).toBe(200);
  };
  const createTrigger = async (body: Record<string, unknown>) => {
    const res = await t.owner.post(`/orgs/${t.orgId}/triggers`, {
      body: JSON.parse(
        JSON.stringify({
          name: 'fleet',
          scopeType: 'workflow',
          workflowName: 'rotate',
          responseMode: 'async',
          ...body,
        }),
      ),
    });
    expect(res.status, res.text).toBe(201);
    return res.body.id as string;
  };
  const batch = async (id: string) => (await t.owner.get(`/orgs/${t.orgId}/batches/${id}`)).body;
  const jobOf = (b: { jobs: Array<{ agentId: string; jobId: string }> }, agent: TestAgent) =>
    b.jobs.find((j) => j.agentId === agent.agentId)!.jobId;

  beforeAll(async () => {
    t = await startTestCoordinator();
    for (const [name, site] of [
      ['gw-a', 'berlin'],
      ['gw-b', 'berlin'],
      ['gw-c', 'berlin'],
      ['kiosk', 'munich'],
    ] as const) {
      const agent = await enrollTestAgent(t.owner, t.orgId, { hostname: name });
      expect((await t.owner.patch(`/orgs/${t.orgId}/agents/${agent.agentId}`, { body: { name } })).status).toBe(200);
      expect((await labels(agent, { site, role: name === 'kiosk' ? 'kiosk' : 'gateway' })).status).toBe(200);
      // gw-c does not have the workflow.
      await agent.putWorkflows(name === 'gw-c' ? [workflow('other')] : [workflow('rotate')]);
      agents[name] = agent;
    }
    triggers.all = await createTrigger({
      agentSelector: 'role=gateway, site=berlin',
      fanout: 'all',
      notifyProvider: 'slack',
      notifyTeamId: 'T0001',
      notifyChannelId: 'C0001',
      notifyOn: 'failure',
    });
    triggers.one = await createTrigger({
      name: 'serial',
      agentSelector: 'role=gateway',
      fanout: 'all',
      maxParallel: 1,
    });
    triggers.none = await createTrigger({ name: 'nobody', agentSelector: 'role=router', fanout: 'all' });
    triggers.sync = await createTrigger({
      name: 'sync',
      agentSelector: 'site=berlin,role=gateway',
      fanout: 'all',
      responseMode: 'sync',
      responseTimeoutMs: 10_000,
    });
    const token = await issueApiToken(t.owner, t.orgId, [{ type: 'trigger', triggerIds: Object.values(triggers) }], {
      rateLimitPerMinute: 100,
    });
    callerToken = token.token;
    caller = t.api.withToken(token.token);
  });
  afterAll(() => t?.close());

  it('makes one job per selected agent, rejected where the workflow is missing, and follows them to the end', async () => {
    const res = await caller.post(`/triggers/${triggers.all}/run`, { body: { params: {} } });
    expect(res.status, res.text).toBe(202);
    expect(res.body).toEqual({
      batchId: expect.any(String),
      jobIds: [expect.any(String), expect.any(String), expect.any(String)],
      jobCount: 3,
      status: 'pending',
      statusUrl: `/api/batches/${res.body.batchId}`,
    });
    const b = await batch(res.body.batchId);
    expect(b).toMatchObject({
      number: 1,
      triggerId: triggers.all,
      workflowName: 'rotate',
      selector: 'role=gateway,site=berlin',
      source: 'webhook',
      status: 'pending',
      jobCount: 3,
      endedAt: null,
      counts: { pending: 2, rejected: 1, success: 0 },
    });
    expect(b.jobs.map((j: { agentName: string }) => j.agentName)).toEqual(['gw-a', 'gw-b', 'gw-c']);
    // The organization's job numbers, taken in one go: consecutive, in the batch's order.
    const numbers = b.jobs.map((j: { number: number }) => j.number);
    expect(numbers).toEqual([numbers[0], numbers[0] + 1, numbers[0] + 2]);
    expect(b.jobs[2]).toMatchObject({
      status: 'rejected',
      errorMessage: 'Agent gw-c does not report the workflow `rotate`',
    });
    // The jobs list filters by batch; each job names its batch.
    const listed = await t.owner.get(`/orgs/${t.orgId}/jobs?batchId=${res.body.batchId}`);
    expect(listed.body).toHaveLength(3);
    expect(listed.body.every((j: { batchId: string }) => j.batchId === res.body.batchId)).toBe(true);

    await runAll(agents['gw-a']!, jobOf(b, agents['gw-a']!));
    expect((await batch(res.body.batchId)).status).toBe('running');
    await runAll(agents['gw-b']!, jobOf(b, agents['gw-b']!), 'failed');
    const ended = await eventually(async () => {
      const now = await batch(res.body.batchId);
      return now.endedAt ? now : null;
    });
    expect(ended).toMatchObject({ status: 'partial', counts: { success: 1, failed: 1, rejected: 1 } });
    // One chat message for the batch, written with its end; none for its jobs.
    const messages = await t.sql.all<{ dedupe_key: string; payload: string }>(
      'SELECT dedupe_key, payload FROM chat_outbox ORDER BY id',
    );
    expect(messages.map((m) => m.dedupe_key)).toEqual([`batch:${res.body.batchId}:outcome`]);
    expect(JSON.parse(messages[0]!.payload)).toMatchObject({
      kind: 'batch_outcome',
      status: 'partial',
      succeeded: 1,
      failed: 2,
      failedAgents: ['gw-b', 'gw-c'],
    });
    const page = await t.owner.get(`/orgs/${t.orgId}/batches`);
    expect(page.body[0]).toMatchObject({ id: res.body.batchId, status: 'partial' });
  });

  it('hands out at most maxParallel jobs of a batch at a time, the next as one ends', async () => {
    const res = await caller.post(`/triggers/${triggers.one}/run`);
    expect(res.status, res.text).toBe(202);
    const b = await batch(res.body.batchId);
    const pending = b.jobs.filter((j: { status: string }) => j.status === 'pending');
    // Numbered after every job made before it, the first batch's included.
    const before = await t.owner.get(`/orgs/${t.orgId}/jobs?limit=200`);
    const older = before.body.filter((j: { batchId: string | null }) => j.batchId !== res.body.batchId);
    expect(Math.min(...b.jobs.map((j: { number: number }) => j.number))).toBe(
      Math.max(...older.map((j: { number: number }) => j.number)) + 1,
    );
    expect(pending).toHaveLength(2);
    const held = async () =>
      (await Promise.all(pending.map((j: { jobId: string }) => t.coordinator.ctx.repos.jobs.findById(j.jobId)))).map(
        (j) => j!.held,
      );
    expect(await held()).toEqual([false, true]);
    // The first job's agent runs it; the second is handed out once it ends.
    const first = pending[0]!;
    const firstAgent = Object.values(agents).find((a) => a.agentId === first.agentId)!;
    await runAll(firstAgent, first.jobId);
    await eventually(async () => ((await held())[1] === false ? true : null));
    const second = pending[1]!;
    await runAll(
      Object.values(agents).find((a) => a.agentId === second.agentId)!,
      second.jobId,
    );
    await eventually(async () => ((await batch(res.body.batchId)).endedAt ? true : null));
  });

  it('answers a sync call when every job ended, one row per agent', async () => {
    const call = caller.post(`/triggers/${triggers.sync}/run`);
    const open = await eventually(async () => {
      const [newest] = (await t.owner.get(`/orgs/${t.orgId}/batches?limit=1`)).body;
      return newest?.triggerId === triggers.sync ? batch(newest.id) : null;
    });
    await runAll(agents['gw-a']!, jobOf(open, agents['gw-a']!));
    await runAll(agents['gw-b']!, jobOf(open, agents['gw-b']!));
    const res = await call;
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ batchId: open.id, status: 'partial', statusUrl: `/api/batches/${open.id}` });
    expect(res.body.jobs.map((j: { agentName: string; status: string }) => [j.agentName, j.status])).toEqual([
      ['gw-a', 'success'],
      ['gw-b', 'success'],
      ['gw-c', 'rejected'],
    ]);
    expect(res.body.timedOut).toBeUndefined();
  });

  it("reads a sync call's batch whole once, for its answer, not again at each end of one of its jobs", async () => {
    const many: TestAgent[] = [];
    for (let i = 0; i < 12; i += 1) {
      const agent = await enrollTestAgent(t.owner, t.orgId, { hostname: `many-${i}` });
      expect((await labels(agent, { role: 'many' })).status).toBe(200);
      await agent.putWorkflows([workflow('rotate')]);
      many.push(agent);
    }
    const trigger = await createTrigger({
      name: 'many sync',
      agentSelector: 'role=many',
      fanout: 'all',
      responseMode: 'sync',
      responseTimeoutMs: 60_000,
    });
    const token = await issueApiToken(t.owner, t.orgId, [{ type: 'trigger', triggerIds: [trigger] }]);
    const call = t.api.withToken(token.token).post(`/triggers/${trigger}/run`);
    const open = await eventually(async () => {
      const [newest] = (await t.owner.get(`/orgs/${t.orgId}/batches?limit=1`)).body;
      return newest?.triggerId === trigger ? batch(newest.id) : null;
    });
    const { batches } = t.coordinator.ctx.repos;
    const jobs = batches.jobs.bind(batches);
    let reads = 0;
    batches.jobs = (batchId) => {
      if (batchId === open.id) reads += 1;
      return jobs(batchId);
    };
    try {
      for (const agent of many) await runAll(agent, jobOf(open, agent));
      const res = await call;
      expect(res.status, res.text).toBe(200);
      expect(res.body).toMatchObject({ batchId: open.id, status: 'success' });
      expect(res.body.jobs).toHaveLength(12);
      // Once for the answer (the batch's settling reads none); it was once more at each job's end.
      expect(reads).toBe(1);
    } finally {
      batches.jobs = jobs;
    }
  });

  it('stops a sync wait at once when the client left while its batch was admitted, not after responseTimeoutMs', async () => {
    const { runs, batches } = t.coordinator.ctx;
    const admit = runs.run.bind(runs);
    const wait = batches.waitForEnd.bind(batches);
    // A slow admission (a PostgreSQL lock wait, a busy group commit): the client leaves meanwhile.
    runs.run = async (...args) => {
      await new Promise((resolve) => setTimeout(resolve, 400));
      return admit(...args);
    };
    let waited!: (ms: number) => void;
    const waitEnded = new Promise<number>((resolve) => (waited = resolve));
    batches.waitForEnd = async (...args) => {
      const started = Date.now();
      const result = await wait(...args);
      waited(Date.now() - started);
      return result;
    };
    try {
      const call = http.request(new URL(`${t.baseUrl}/triggers/${triggers.sync}/run`), {
        method: 'POST',
        agent: false,
        headers: { authorization: `Bearer ${callerToken}`, 'content-type': 'application/json' },
      });
      const failed = new Promise((resolve) => call.on('error', resolve));
      call.end('{}');
      setTimeout(() => call.destroy(), 100);
      expect(await failed).toBeInstanceOf(Error);
      // Without the check the wait would hold on for the trigger's 10 s.
      expect(await waitEnded).toBeLessThan(2_000);
    } finally {
      runs.run = admit;
      batches.waitForEnd = wait;
    }
    const [left] = (await t.owner.get(`/orgs/${t.orgId}/batches?triggerId=${triggers.sync}&limit=1`)).body;
    expect((await t.owner.post(`/batches/${left.id}/cancel`)).status).toBe(200);
  });

  it('names the batch with one idempotency key, and cancels every unfinished job of it', async () => {
    const headers = { 'idempotency-key': 'rotate-2026-11-28' };
    const first = await caller.post(`/triggers/${triggers.all}/run`, { headers });
    const again = await caller.post(`/triggers/${triggers.all}/run`, { headers });
    expect(again.status).toBe(202);
    expect(again.body).toEqual({ ...first.body, idempotent: true });
    const other = await caller.post(`/triggers/${triggers.all}/run`, { headers, body: { params: { x: 1 } } });
    expect(other.status).toBe(409);
    expect(other.body.code).toBe('idempotency_conflict');

    const cancelled = await t.owner.post(`/batches/${first.body.batchId}/cancel`);
    expect(cancelled.status, cancelled.text).toBe(200);
    expect(cancelled.body).toMatchObject({ counts: { cancelled: 2, rejected: 1 }, status: 'failed' });
    expect(cancelled.body.endedAt).not.toBeNull();
    const audit = await t.owner.get(`/orgs/${t.orgId}/audit?action=batch.cancel`);
    expect(audit.body[0]).toMatchObject({ targetId: first.body.batchId, metadata: { jobs: 2 } });
  });

  it('refuses a key that named a job before the trigger moved onto a selector, and one that named a batch before it moved back', async () => {
    const moving = await createTrigger({ name: 'moving', agentId: agents['gw-a']!.agentId });
    const token = await issueApiToken(t.owner, t.orgId, [{ type: 'trigger', triggerIds: [moving] }]);
    const run = (key: string) =>
      t.api.withToken(token.token).post(`/triggers/${moving}/run`, { headers: { 'idempotency-key': key } });
    const patch = async (body: Record<string, unknown>) =>
      expect((await t.owner.patch(`/orgs/${t.orgId}/triggers/${moving}`, { body })).status).toBe(200);
    expect((await run('made-a-job')).body.jobId).toEqual(expect.any(String));
    await patch({ agentId: null, agentSelector: 'role=gateway, site=berlin', fanout: 'all' });
    const asBatch = await run('made-a-job');
    expect([asBatch.status, asBatch.body.code]).toEqual([409, 'idempotency_conflict']);
    expect(asBatch.body.message).toBe(
      'This Idempotency-Key was already used for one job of this trigger (it ran on one agent then); send another key',
    );
    expect((await run('made-a-batch')).body.batchId).toEqual(expect.any(String));
    await patch({ agentSelector: null, fanout: null, agentId: agents['gw-a']!.agentId });
    const asJob = await run('made-a-batch');
    expect([asJob.status, asJob.body.code]).toEqual([409, 'idempotency_conflict']);
    expect(asJob.body.message).toBe(
      'This Idempotency-Key was already used for a batch of this trigger (it ran on a selector then); send another key',
    );
    expect((await run('made-a-job')).body).toMatchObject({ idempotent: true });
  });

  it("lists one trigger's batches newest first, a page at a time, and refuses a malformed trigger id", async () => {
    const all = (await t.owner.get(`/orgs/${t.orgId}/batches`)).body as { id: string; triggerId: string }[];
    const ofAll = all.filter((b) => b.triggerId === triggers.all).map((b) => b.id);
    expect(ofAll).toHaveLength(2);
    const first = await t.owner.get(`/orgs/${t.orgId}/batches?triggerId=${triggers.all}&limit=1`);
    expect(first.status, first.text).toBe(200);
    expect(first.body.map((b: { id: string }) => b.id)).toEqual([ofAll[0]]);
    const cursor = first.headers.get('x-next-cursor');
    expect(cursor).not.toBeNull();
    const next = await t.owner.get(`/orgs/${t.orgId}/batches?triggerId=${triggers.all}&limit=1&cursor=${cursor}`);
    expect(next.body.map((b: { id: string }) => b.id)).toEqual([ofAll[1]]);
    expect(next.headers.get('x-next-cursor')).toBeNull();
    // A trigger with no batch, as an id of no trigger, lists none.
    expect((await t.owner.get(`/orgs/${t.orgId}/batches?triggerId=${triggers.none}`)).body).toEqual([]);
    const malformed = await t.owner.get(`/orgs/${t.orgId}/batches?triggerId=nope`);
    expect(malformed.status).toBe(422);
    // In words, as every id of the API: not the schema's regular expression.
    expect(malformed.body).toMatchObject({
      code: 'validation_failed',
      message: 'querystring.triggerId must be a UUID',
      details: [{ path: 'querystring.triggerId', message: 'must be a UUID' }],
    });
    const jobs = await t.owner.get(`/orgs/${t.orgId}/jobs?batchId=nope&agentId=${'x'.repeat(36)}`);
    expect(jobs.status).toBe(422);
    expect(jobs.body.details).toEqual([
      { path: 'querystring.batchId', message: 'must be a UUID' },
      { path: 'querystring.agentId', message: 'must be a UUID' },
    ]);
  });

  it('makes a batch at each occurrence of a schedule, claimed once, skipped while the previous one runs', async () => {
    const cron = await createTrigger({
      name: 'nightly',
      type: 'cron',
      cronExpression: '0 3 * * *',
      agentSelector: 'role=gateway',
      fanout: 'all',
      responseMode: undefined,
    });
    const fire = (scheduledAt: string) =>
      t.coordinator.ctx.runs.runOccurrence({ orgId: t.orgId, triggerId: cron, scheduledAt, stillDue: () => true });
    const first = await fire('2026-11-28T03:00:00.000Z');
    expect(first).toEqual({ outcome: 'batch_created', batchId: expect.any(String) });
    expect(await fire('2026-11-28T03:00:00.000Z')).toEqual({ outcome: 'claimed_before' });
    expect(await fire('2026-11-29T03:00:00.000Z')).toEqual({ outcome: 'skipped_overlap' });
    const b = await batch((first as { batchId: string }).batchId);
    expect(b).toMatchObject({ source: 'cron', jobCount: 3, counts: { pending: 2, rejected: 1 } });
    const occurrences = await t.owner.get(`/orgs/${t.orgId}/triggers/${cron}/occurrences`);
    expect(occurrences.body.map((o: { outcome: string; batchId: string | null }) => [o.outcome, o.batchId])).toEqual([
      ['skipped', null],
      ['job_created', b.id],
    ]);
    expect((await t.owner.post(`/batches/${b.id}/cancel`)).status).toBe(200);
  });

  it("records a selector trigger's selector and fanout in its creation's audit entry", async () => {
    const entry = (await auditEntries(t.owner, t.orgId, 'trigger.create')).find((e) => e.targetId === triggers.all);
    expect(entry?.metadata).toMatchObject({ agentSelector: 'role=gateway,site=berlin', fanout: 'all', agentId: null });
  });

  it('lets a trigger grant discover the agents a selector trigger selects now, and its workflow on each', async () => {
    const token = await issueApiToken(t.owner, t.orgId, [{ type: 'trigger', triggerIds: [triggers.all!] }]);
    const discover = t.api.withToken(token.token);
    const agentsSeen = await discover.get('/agents');
    expect(agentsSeen.status, agentsSeen.text).toBe(200);
    expect(agentsSeen.body.map((a: { name: string }) => a.name).sort()).toEqual(['gw-a', 'gw-b', 'gw-c']);
    const workflows = await discover.get('/workflows');
    expect(workflows.body.map((w: { name: string; agentId: string }) => [w.name, w.agentId]).sort()).toEqual(
      [
        ['rotate', agents['gw-a']!.agentId],
        ['rotate', agents['gw-b']!.agentId],
      ].sort(),
    );
  });

  it('refuses a selector that matches nothing with 409, and bad selector triggers with 422 naming the field', async () => {
    const none = await caller.post(`/triggers/${triggers.none}/run`);
    expect(none.status).toBe(409);
    expect(none.body).toMatchObject({ code: 'no_matching_agent' });
    const refused = async (body: Record<string, unknown>, path: string) => {
      const res = await t.owner.post(`/orgs/${t.orgId}/triggers`, {
        body: { name: 'bad', scopeType: 'workflow', workflowName: 'rotate', responseMode: 'async', ...body },
      });
      expect(res.status, res.text).toBe(422);
      expect(res.body.details.map((d: { path: string }) => d.path)).toContain(path);
      return res.body.details.find((d: { path: string }) => d.path === path).message as string;
    };
    await refused(
      { agentId: agents['gw-a']!.agentId, agentSelector: 'role=gateway', fanout: 'all' },
      'body.agentSelector',
    );
    expect(await refused({ agentSelector: 'role in gateway', fanout: 'all' }, 'body.agentSelector')).toBe(
      "is not a label selector: at position 8: expected '(', found 'gateway'",
    );
    await refused({ agentSelector: 'role=gateway' }, 'body.fanout');
    await refused(
      { agentSelector: 'role=gateway', fanout: 'all', scopeType: 'agent', workflowName: null },
      'body.scopeType',
    );
    await refused({ agentId: agents['gw-a']!.agentId, fanout: 'all' }, 'body.fanout');
    await refused({}, 'body.agentId');
  });
});

/**
 * An agent revoked while a call on a selector that matched it is being admitted: its revocation
 * failed its open jobs before the batch's job was stored, which then waited for an agent that
 * never comes. The job sweeper fails such jobs, and the batch goes on and ends.
 */
describe('a batch whose agent is revoked during its call', () => {
  let t: TestCoordinator;
  afterAll(() => t?.close());

  it('fails the job of the revoked agent, hands out the next one and ends the batch', async () => {
    t = await startTestCoordinator({ env: { DROVER_JOB_DEADLINE_GRACE_MS: '200' } });
    const fleet: TestAgent[] = [];
    for (const name of ['gw-a', 'gw-b']) {
      const agent = await enrollTestAgent(t.owner, t.orgId, { hostname: name });
      expect((await t.owner.patch(`/orgs/${t.orgId}/agents/${agent.agentId}`, { body: { name } })).status).toBe(200);
      await agent.request('PUT', '/v1/agent/labels', { labels: { os: 'linux', arch: 'x64', role: 'gateway' } });
      await agent.putWorkflows([workflow('rotate')]);
      fleet.push(agent);
    }
    const [gwA, gwB] = fleet as [TestAgent, TestAgent];
    const trigger = await t.owner.post(`/orgs/${t.orgId}/triggers`, {
      body: {
        name: 'serial',
        agentSelector: 'role=gateway',
        fanout: 'all',
        maxParallel: 1,
        scopeType: 'workflow',
        workflowName: 'rotate',
        responseMode: 'async',
      },
    });
    expect(trigger.status, trigger.text).toBe(201);
    // gw-a is revoked once the call selected it, before its batch is stored.
    const batches = t.coordinator.ctx.repos.batches;
    const admit = batches.admit.bind(batches);
    batches.admit = async (request) => {
      expect((await t.owner.delete(`/orgs/${t.orgId}/agents/${gwA.agentId}`)).status).toBe(200);
      return admit(request);
    };
    const run = await t.owner.post(`/orgs/${t.orgId}/triggers/${trigger.body.id}/run`, { body: {} });
    batches.admit = admit;
    expect(run.status, run.text).toBe(202);
    const batch = async () => (await t.owner.get(`/orgs/${t.orgId}/batches/${run.body.batchId}`)).body;

    // gw-a's job fails (it was handed out: maxParallel 1 held gw-b's), and gw-b's is handed out.
    await eventually(async () => (await batch()).jobs[0].status === 'failed');
    expect((await batch()).jobs[0]).toMatchObject({
      agentName: 'gw-a',
      errorMessage: 'the agent was revoked before the job finished',
    });
    const next = (await batch()).jobs[1].jobId;
    // Handed out (SQLite's 0, PostgreSQL's false).
    await eventually(
      async () => !(await t.sql.get<{ held: number | boolean }>('SELECT held FROM jobs WHERE id = ?', next))!.held,
    );
    for (const [step, body] of [['accept'], ['start'], ['finish', finishBody()]] as const) {
      expect((await gwB.request('POST', `/v1/agent/jobs/${next}/${step}`, body)).status).toBe(200);
    }
    await eventually(async () => (await batch()).endedAt !== null);
    expect(await batch()).toMatchObject({ status: 'partial', counts: { failed: 1, success: 1 } });
  });
});

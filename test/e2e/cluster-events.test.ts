import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool } from '../../coordinator/src/db/postgres/pool.js';
import { INSERT_JOB, newJobParams } from '../../coordinator/src/db/repositories/job-rows.js';
import { PostgresDatabase } from '../../coordinator/src/db/sql/postgres.js';
import { freshPostgresDatabase, queryDatabase, type TestDatabase } from '../../coordinator/test/postgres/database.js';
import { agentVia, enrollTestAgent, workflow, type TestAgent } from '../helpers/agent.js';
import { startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import { finishBody } from '../helpers/jobs.js';
import { eventually, sleep } from '../helpers/poll.js';
import { openAgentStream, type AgentStream } from '../helpers/sse.js';
import { runnableTrigger } from '../helpers/trigger-runs.js';

/**
 * Two coordinators on one PostgreSQL database (in this process, each with its own data directory,
 * port and pool): what one commits reaches what the other holds, through the cluster relay
 * (LISTEN/NOTIFY). The agent's stream is on `b`; jobs, cancels and revocations are made on `a`.
 */

let database: TestDatabase;
let a: TestCoordinator;
let b: TestCoordinator;
let agent: TestAgent;
let stream: AgentStream | undefined;

beforeAll(async () => {
  database = await freshPostgresDatabase();
  const env = {
    DROVER_DATABASE_URL: database.url,
    DROVER_STREAM_PING_MS: '500',
    DROVER_AGENT_DISCONNECT_GRACE_MS: '1000',
  };
  // Started at once on the empty database: both migrate and bootstrap it, one wins each race.
  [a, b] = await Promise.all([startTestCoordinator({ env }), startTestCoordinator({ env })]);
  agent = await enrollTestAgent(a.owner, a.orgId);
  const put = await agent.putWorkflows([workflow('build'), workflow('deploy')]);
  expect(put.status).toBe(200);
}, 60_000);

afterAll(async () => {
  stream?.close();
  await a?.close();
  await b?.close();
  await database?.drop();
});

/** Opens the agent's stream on `b`, once. */
async function streamOnB(): Promise<AgentStream> {
  if (!stream || stream.isEnded) {
    stream = await openAgentStream(b.url, agent);
    expect(stream.status).toBe(200);
    await eventually(() =>
      b.coordinator.ctx.repos.agents.findById(agent.agentId).then((x) => x?.status === 'connected'),
    );
  }
  return stream;
}

/** The agent's side of a job, signed, through `via`. */
const move = (via: TestCoordinator, jobId: string, step: 'accept' | 'start' | 'finish', body?: unknown) =>
  agentVia(agent, via.baseUrl).request('POST', `/v1/agent/jobs/${jobId}/${step}`, body);

describe('two coordinators on one PostgreSQL database', () => {
  it('bootstrap one owner and one organization when started at once, and hold one server key', async () => {
    expect(await a.coordinator.ctx.repos.users.count()).toBe(1);
    expect(await a.coordinator.ctx.repos.orgs.count()).toBe(1);
    expect([a.coordinator.bootstrap.created, b.coordinator.bootstrap.created].filter(Boolean)).toHaveLength(1);
    expect(b.orgId).toBe(a.orgId);
    expect(b.coordinator.ctx.serverKey.publicKey).toBe(a.coordinator.ctx.serverKey.publicKey);
    expect(agent.serverPublicKey).toBe(b.coordinator.ctx.serverKey.publicKey);
  });

  it('share sessions and API tokens: each accepts what the other issued', async () => {
    const orgs = await b.api.withToken(a.owner.token).get('/orgs');
    expect(orgs.status).toBe(200);
    const tr = await runnableTrigger(a, agent.agentId, 'build');
    const onB = await b.api.post(`/triggers/${tr.id}/run`, { token: tr.token, body: {} });
    expect(onB.status, onB.text).toBe(202);
  });

  it('sends a job created on one to the agent whose stream is on the other', async () => {
    const s = await streamOnB();
    const tr = await runnableTrigger(a, agent.agentId, 'deploy');
    const run = await a.api.post(`/triggers/${tr.id}/run`, { token: tr.token, body: {} });
    expect(run.status, run.text).toBe(202);
    const event = await s.next((e) => e.event === 'job' && JSON.parse(e.data).jobId === run.body.jobId);
    expect(JSON.parse(event.data)).toMatchObject({ jobId: run.body.jobId, workflowName: 'deploy' });
  });

  it('answers a sync call waiting on one when the job ends through the other', async () => {
    const s = await streamOnB();
    const tr = await runnableTrigger(a, agent.agentId, 'build', { name: 'sync build', responseMode: 'sync' });
    const call = a.api.post(`/triggers/${tr.id}/run`, { token: tr.token, body: {} });
    const job = JSON.parse(
      (await s.next((e) => e.event === 'job' && JSON.parse(e.data).workflowName === 'build')).data,
    );
    for (const step of ['accept', 'start'] as const) expect((await move(b, job.jobId, step)).status).toBe(200);
    expect((await move(b, job.jobId, 'finish', finishBody({ output: { built: 'yes' } }))).status).toBe(200);
    const answer = await call;
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body).toMatchObject({ jobId: job.jobId, status: 'success', output: { built: 'yes' } });
  });

  it('tells the agent on the other of a cancel made on one', async () => {
    const s = await streamOnB();
    const tr = await runnableTrigger(a, agent.agentId, 'deploy', { name: 'cancel me' });
    const run = await a.api.post(`/triggers/${tr.id}/run`, { token: tr.token, body: {} });
    await s.next((e) => e.event === 'job' && JSON.parse(e.data).jobId === run.body.jobId);
    for (const step of ['accept', 'start'] as const) expect((await move(b, run.body.jobId, step)).status).toBe(200);
    const cancel = await a.owner.post(`/jobs/${run.body.jobId}/cancel`);
    expect(cancel.status, cancel.text).toBe(202);
    const event = await s.next((e) => e.event === 'cancel');
    expect(JSON.parse(event.data)).toEqual({ jobId: run.body.jobId });
  });

  it('schedules on the other a cron trigger created on one', async () => {
    const created = await a.owner.post(`/orgs/${a.orgId}/triggers`, {
      body: {
        name: 'nightly',
        agentId: agent.agentId,
        scopeType: 'workflow',
        workflowName: 'build',
        responseMode: 'async',
        type: 'cron',
        cronExpression: '0 3 * * *',
      },
    });
    expect(created.status, created.text).toBe(201);
    await eventually(() => b.coordinator.scheduler.nextDue(created.body.id) !== null, 5_000, 'b to schedule it');
    const paused = await a.owner.patch(`/orgs/${a.orgId}/triggers/${created.body.id}`, {
      body: { cronEnabled: false },
    });
    expect(paused.status).toBe(200);
    await eventually(() => b.coordinator.scheduler.nextDue(created.body.id) === null, 5_000, 'b to unschedule it');
  });

  it('sends a job whose notification never went out (its coordinator was killed) at the next ping', async () => {
    const s = await streamOnB();
    // Committed as an admission would, older than the check's margin, and never announced.
    const pool = createPool(database.url);
    const jobId = randomUUID();
    try {
      await new PostgresDatabase(pool).run(
        INSERT_JOB,
        newJobParams({
          id: jobId,
          orgId: agent.orgId,
          kind: 'trigger',
          source: 'webhook',
          triggerId: null,
          agentId: agent.agentId,
          workflowId: null,
          workflowName: 'deploy',
          status: 'pending',
          ref: null,
          debug: false,
          params: {},
          errorMessage: null,
          forced: false,
          forceReason: null,
          apiTokenId: null,
          userId: null,
          timeoutMs: 60_000,
          createdAt: new Date(Date.now() - 5_000).toISOString(),
        }),
      );
    } finally {
      await pool.end();
    }
    const event = await s.next((e) => e.event === 'job' && JSON.parse(e.data).jobId === jobId, 10_000);
    expect(JSON.parse(event.data)).toMatchObject({ jobId, workflowName: 'deploy' });
  });

  it('keeps the agent connected when a coordinator that starts beside the others finds it connected', async () => {
    await streamOnB();
    // The database keeps a trace of the agent's status changes, so that a `disconnected` is seen
    // however briefly it lasts (b's next ping may end it within milliseconds).
    await queryDatabase(
      database.url,
      `CREATE TABLE test_status_changes (seq bigserial PRIMARY KEY, status text NOT NULL);
       CREATE FUNCTION test_trace_status() RETURNS trigger LANGUAGE plpgsql AS $$
         BEGIN INSERT INTO test_status_changes (status) VALUES (NEW.status); RETURN NEW; END $$;
       CREATE TRIGGER test_trace_status AFTER UPDATE OF status ON agents FOR EACH ROW
         WHEN (OLD.status IS DISTINCT FROM NEW.status) EXECUTE FUNCTION test_trace_status();`,
    );
    const changes = async () =>
      (
        await queryDatabase<{ status: string }>(database.url, 'SELECT status FROM test_status_changes ORDER BY seq')
      ).map((row) => row.status);
    // Its grace is far shorter than b's pings: it marks the agent disconnected, b's next ping heals
    // it. Unless b pinged between c's start reading the agent and its grace ending: then c rightly
    // leaves the agent alone (it was seen since), and no status changes at all.
    const c = await startTestCoordinator({
      env: { DROVER_DATABASE_URL: database.url, DROVER_AGENT_DISCONNECT_GRACE_MS: '50' },
    });
    const started = Date.now();
    let seen = '';
    try {
      await eventually(
        async () => {
          seen = (await changes()).join();
          return seen === 'disconnected,connected' || (seen === '' && Date.now() - started > 3_000);
        },
        15_000,
        () => `c to mark the agent disconnected, then b's ping to mark it connected again (seen: ${seen})`,
      );
      await eventually(
        async () => (await c.coordinator.ctx.repos.agents.findById(agent.agentId))?.status === 'connected',
        5_000,
        'the agent connected',
      );
    } finally {
      await c.close();
    }
  });

  it("closes the agent's stream on one when it opens one on the other: a second machine with its identity is not handed every job too", async () => {
    const onB = await streamOnB();
    await sleep(1_100); // older than a stream the other's event could be older than
    const onA = await openAgentStream(a.url, agent);
    try {
      expect(onA.status).toBe(200);
      const replaced = await onB.next((e) => e.event === 'replaced', 5_000);
      expect(JSON.parse(replaced.data)).toEqual({ by: null });
      await onB.ended;
      expect(b.coordinator.ctx.streams.isConnected(agent.agentId)).toBe(false);
      expect(a.coordinator.ctx.streams.isConnected(agent.agentId)).toBe(true);
    } finally {
      onA.close();
    }
  });

  it('marks the agent disconnected when the coordinator that held its stream died and none other holds it', async () => {
    // Its stream moves from b to c: b's countdown finds it seen since (c's pings).
    (await streamOnB()).close();
    const c = await startTestCoordinator({
      env: { DROVER_DATABASE_URL: database.url, DROVER_STREAM_PING_MS: '500' },
    });
    const onC = await openAgentStream(c.url, agent);
    expect(onC.status).toBe(200);
    await onC.next((e) => e.event === 'ping', 5_000);
    // c goes without marking anything (as a coordinator killed with SIGKILL): the agent is
    // `connected` in the database, and nobody pings it.
    await c.close();
    onC.close();
    const status = async () => (await a.coordinator.ctx.repos.agents.findById(agent.agentId))?.status;
    expect(await status()).toBe('connected');
    // a and b: after their grace and two of their pings without anyone seeing it.
    await eventually(async () => (await status()) === 'disconnected', 10_000, 'the agent disconnected');
  });

  it('closes the stream on the other when the agent is revoked on one', async () => {
    const s = await streamOnB();
    const revoked = await a.owner.delete(`/orgs/${a.orgId}/agents/${agent.agentId}`);
    expect(revoked.status).toBe(200);
    await s.ended;
    expect(s.isEnded).toBe(true);
  });
});

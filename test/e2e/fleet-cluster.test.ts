import type { JobAssignment } from '@drover/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshPostgresDatabase, type TestDatabase } from '../../coordinator/test/postgres/database.js';
import { agentVia, enrollTestAgent, workflow, type TestAgent } from '../helpers/agent.js';
import { startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import type { ApiClient } from '../helpers/http.js';
import { finishBody } from '../helpers/jobs.js';
import { eventually } from '../helpers/poll.js';
import { openAgentStream, type AgentStream } from '../helpers/sse.js';
import { issueApiToken } from '../helpers/tokens.js';

/**
 * Pools and batches (docs/fleets.md) across three coordinators on one PostgreSQL database (in
 * this process, each with its own data directory, port and connections): six agents labelled
 * `role=builder` hold their streams on the three, each run by a small worker in the test that
 * takes the jobs its stream sends, refuses one past its queue's capacity (`queue_full`, as the
 * agent does) and runs the others with its signed client through another coordinator. A pool's
 * calls through all three at once end each job once, on one agent, none left waiting, whether the
 * agents were connected (the admissions choose) or connected after the calls (their claims take
 * the waiting jobs); a batch with maxParallel made on one coordinator never has more than that
 * many jobs out while its agents run them through the others, and ends once.
 */

const NODES = 3;
const AGENTS = 6;
const CALLS = 60;

let database: TestDatabase;
const nodes: TestCoordinator[] = [];
const agents: TestAgent[] = [];
/** An agent's queue capacity: 1 or 2, alternately. */
const capacityOf = (i: number) => 1 + (i % 2);
let poolTrigger: string;
let batchTrigger: string;
/** The caller of both triggers' public runs (an API token), on any coordinator. */
let token: string;

beforeAll(async () => {
  database = await freshPostgresDatabase();
  // A dropped stream makes its agent disconnected at once: the waiting pool needs none connected.
  const env = {
    DROVER_DATABASE_URL: database.url,
    DROVER_STREAM_PING_MS: '500',
    DROVER_AGENT_DISCONNECT_GRACE_MS: '0',
  };
  // The first one migrates and bootstraps the database, then the others start beside it (starting
  // together is cluster-events.test.ts's case).
  nodes.push(await startTestCoordinator({ env }));
  nodes.push(...(await Promise.all(Array.from({ length: NODES - 1 }, () => startTestCoordinator({ env })))));
  const [first] = nodes;
  for (let i = 0; i < AGENTS; i++) {
    const agent = await enrollTestAgent(first!.owner, first!.orgId, { hostname: `builder-${i}` });
    const labels = await agent.request('PUT', '/v1/agent/labels', {
      labels: { os: 'linux', arch: 'x64', role: 'builder' },
    });
    expect(labels.status, labels.text).toBe(200);
    expect((await agent.putWorkflows([workflow('build'), workflow('rotate')])).status).toBe(200);
    agents.push(agent);
  }
  const create = async (node: TestCoordinator, body: Record<string, unknown>) => {
    const res = await node.owner.post(`/orgs/${node.orgId}/triggers`, {
      body: { scopeType: 'workflow', responseMode: 'async', agentSelector: 'role=builder', ...body },
    });
    expect(res.status, res.text).toBe(201);
    return res.body.id as string;
  };
  poolTrigger = await create(nodes[1]!, { name: 'any builder', fanout: 'one', workflowName: 'build' });
  batchTrigger = await create(nodes[2]!, {
    name: 'every builder',
    fanout: 'all',
    workflowName: 'rotate',
    maxParallel: 2,
  });
  token = (
    await issueApiToken(nodes[2]!.owner, nodes[2]!.orgId, [
      { type: 'trigger', triggerIds: [poolTrigger, batchTrigger] },
    ])
  ).token;
}, 60_000);

afterAll(async () => {
  for (const w of workers) w.stream.close();
  for (const node of nodes) await node.close();
  await database?.drop();
});

/** What the workers saw, for one case. */
interface Ledger {
  /** The agents each job was handed to (its `job` events), in order. */
  handed: Map<string, string[]>;
  /** Jobs a worker refused, its queue full: sent past the capacity its stream announced. */
  refused: string[];
  /** Reports the coordinator did not answer 200. */
  errors: string[];
  /** Jobs of each workflow handed out and not run yet, across the agents, and the most at once. */
  out: Map<string, number>;
  mostOut: Map<string, number>;
}

const newLedger = (): Ledger => ({ handed: new Map(), refused: [], errors: [], out: new Map(), mostOut: new Map() });

interface Worker {
  agent: TestAgent;
  stream: AgentStream;
  /** The jobs it ran to the end. */
  ran: string[];
  /** Resolves once its stream ended and its last job was reported. */
  done: Promise<void>;
}

const workers: Worker[] = [];

/**
 * Agent `i`'s stream on node `on`, with its capacity, and its worker: the agent's side of each
 * job it is sent, one job at a time in the order they came (accept, start, finish), through the
 * next coordinator; a job beyond its capacity is refused as the agent's full queue refuses it.
 */
async function startWorker(i: number, on: number, ledger: Ledger): Promise<Worker> {
  const agent = agents[i]!;
  const capacity = capacityOf(i);
  const stream = await openAgentStream(nodes[on]!.url, agent, { path: `/v1/agent/stream?capacity=${capacity}` });
  expect(stream.status, stream.text).toBe(200);
  const reports = agentVia(agent, nodes[(on + 1) % NODES]!.baseUrl);
  const report = async (jobId: string, step: string, body?: unknown) => {
    try {
      const res = await reports.request('POST', `/v1/agent/jobs/${jobId}/${step}`, body);
      if (res.status !== 200) ledger.errors.push(`${step} ${jobId} by agent ${i}: ${res.status} ${res.text}`);
    } catch (error) {
      ledger.errors.push(`${step} ${jobId} by agent ${i}: ${(error as Error).message}`);
    }
  };
  const count = (name: string, by: number) => {
    const n = (ledger.out.get(name) ?? 0) + by;
    ledger.out.set(name, n);
    ledger.mostOut.set(name, Math.max(ledger.mostOut.get(name) ?? 0, n));
  };
  const ran: string[] = [];
  let held = 0;
  let running = Promise.resolve();
  const run = async (job: JobAssignment) => {
    await report(job.jobId, 'accept');
    await report(job.jobId, 'start');
    // Its place in the queue is free once it ran, before the report of its end.
    held -= 1;
    count(job.workflowName, -1);
    await report(job.jobId, 'finish', finishBody());
    ran.push(job.jobId);
  };
  const reading = (async () => {
    for (;;) {
      let job: JobAssignment;
      try {
        job = await stream.nextJob<JobAssignment>(60_000);
      } catch {
        if (stream.isEnded) return;
        continue;
      }
      ledger.handed.set(job.jobId, [...(ledger.handed.get(job.jobId) ?? []), agent.agentId]);
      if (held >= capacity) {
        ledger.refused.push(job.jobId);
        running = running.then(() => report(job.jobId, 'reject', { reason: 'queue_full' }));
        continue;
      }
      held += 1;
      count(job.workflowName, 1);
      running = running.then(() => run(job));
    }
  })();
  const worker: Worker = {
    agent,
    stream,
    ran,
    done: reading.then(() => running),
  };
  workers.push(worker);
  return worker;
}

/** Opens every agent's stream, spread over the coordinators, with its worker. */
const startWorkers = (ledger: Ledger, on: (i: number) => number = (i) => i % NODES) =>
  Promise.all(agents.map((_, i) => startWorker(i, on(i), ledger)));

async function stopWorkers(list: Worker[]): Promise<void> {
  for (const w of list) w.stream.close();
  await Promise.all(list.map((w) => w.done));
}

const owner = () => nodes[0]!.owner;
const orgId = () => nodes[0]!.orgId;
const caller = (k: number): ApiClient => nodes[k % NODES]!.api.withToken(token);

async function agentStatuses(): Promise<string[]> {
  const res = await owner().get<{ id: string; status: string }[]>(`/orgs/${orgId()}/agents`);
  return agents.map((a) => res.body.find((b) => b.id === a.agentId)?.status ?? 'missing');
}

/** Waits until every agent is connected, or none is (failing with their statuses). */
async function untilEveryAgent(state: 'connected' | 'disconnected'): Promise<void> {
  let seen: string[] = [];
  await eventually(
    async () => {
      seen = await agentStatuses();
      return seen.every((s) => (s === 'connected') === (state === 'connected'));
    },
    10_000,
    () => `every agent ${state} (seen: ${seen.join(', ')})`,
  );
}

/** The pool's calls, through the three coordinators alternately, all at once. */
async function callPool(): Promise<{ jobId: string; agentId?: string }[]> {
  return Promise.all(
    Array.from({ length: CALLS }, async (_, k) => {
      const res = await caller(k).post(`/triggers/${poolTrigger}/run`, { body: {} });
      expect(res.status, res.text).toBe(202);
      return res.body as { jobId: string; agentId?: string };
    }),
  );
}

interface JobRow {
  id: string;
  status: string;
  agentId: string | null;
}

/** The jobs as the API shows them, once every one ended (failing with those still open). */
async function ended(ids: readonly string[]): Promise<Map<string, JobRow>> {
  let open: JobRow[] = [];
  return eventually(
    async () => {
      const res = await owner().get<JobRow[]>(`/orgs/${orgId()}/jobs?triggerId=${poolTrigger}&limit=200`);
      const byId = new Map(res.body.map((j) => [j.id, j]));
      open = ids.map((id) => byId.get(id) ?? { id, status: 'missing', agentId: null });
      open = open.filter((j) => ['pending', 'queued', 'running', 'missing'].includes(j.status));
      return open.length === 0 && byId;
    },
    15_000,
    () => `every job to end (still open: ${JSON.stringify(open.slice(0, 5))}, ${open.length} in all)`,
  );
}

/** Every job ran once, on the one agent it was handed to, and succeeded; none was refused. */
function expectEachRunOnce(ledger: Ledger, ids: readonly string[], jobs: Map<string, JobRow>, list: Worker[]) {
  expect(ledger.errors, 'reports refused').toEqual([]);
  expect(ledger.refused, 'jobs sent past a full queue').toEqual([]);
  expect(new Set(ids).size).toBe(CALLS);
  // Each job id was sent once, to one agent, and none other was sent.
  expect(
    [...ledger.handed].filter(([, to]) => to.length !== 1),
    'jobs sent more than once',
  ).toEqual([]);
  expect([...ledger.handed.keys()].sort()).toEqual([...ids].sort());
  const ranBy = new Map<string, string>();
  for (const w of list) for (const id of w.ran) ranBy.set(id, w.agent.agentId);
  expect(list.reduce((n, w) => n + w.ran.length, 0)).toBe(CALLS);
  for (const id of ids) {
    expect(jobs.get(id)).toMatchObject({ status: 'success', agentId: ledger.handed.get(id)![0] });
    expect(ranBy.get(id)).toBe(jobs.get(id)!.agentId);
  }
  // The load spread: every agent ran some.
  expect(
    list.map((w) => w.ran.length),
    'jobs run by each agent',
  ).not.toContain(0);
}

describe('pools and batches across three coordinators on one PostgreSQL database', { timeout: 30_000 }, () => {
  it("gives each of a pool's calls, made through every coordinator at once, to one connected agent, which runs it once", async () => {
    const ledger = newLedger();
    const list = await startWorkers(ledger);
    await untilEveryAgent('connected');
    const calls = await callPool();
    const ids = calls.map((c) => c.jobId);
    const jobs = await ended(ids);
    await stopWorkers(list);
    expectEachRunOnce(ledger, ids, jobs, list);
    // Every queue was full at some point: some calls waited in the pool and were claimed.
    expect(calls.filter((c) => c.agentId === undefined).length).toBeGreaterThan(0);
  });

  it("keeps a pool's calls made while no agent is connected waiting, and the agents that connect on any coordinator take each once", async () => {
    await untilEveryAgent('disconnected');
    const calls = await callPool();
    expect(calls.filter((c) => c.agentId !== undefined)).toEqual([]);
    const ids = calls.map((c) => c.jobId);
    const waiting = await owner().get<JobRow[]>(
      `/orgs/${orgId()}/jobs?triggerId=${poolTrigger}&status=pending&limit=200`,
    );
    expect(waiting.body.filter((j) => ids.includes(j.id) && j.agentId === null)).toHaveLength(CALLS);

    const ledger = newLedger();
    // Spread the other way round from the first case.
    const list = await startWorkers(ledger, (i) => NODES - 1 - (i % NODES));
    const jobs = await ended(ids);
    await stopWorkers(list);
    expectEachRunOnce(ledger, ids, jobs, list);
  });

  it('hands out a batch made on one coordinator at most maxParallel jobs at a time to agents streaming on the others, and ends it once', async () => {
    await untilEveryAgent('disconnected');
    const ledger = newLedger();
    // On the second and the third coordinator; the batch is made on the first.
    const list = await startWorkers(ledger, (i) => 1 + (i % 2));
    await untilEveryAgent('connected');
    const res = await caller(0).post(`/triggers/${batchTrigger}/run`, { body: {} });
    expect(res.status, res.text).toBe(202);
    expect(res.body.jobCount).toBe(AGENTS);
    const batchId = res.body.batchId as string;
    const batch = async (node: TestCoordinator) =>
      (await node.owner.get(`/orgs/${node.orgId}/batches/${batchId}`)).body as {
        status: string;
        endedAt: string | null;
        counts: Record<string, number>;
        jobs: { jobId: string; agentId: string; status: string; finishedAt: string }[];
      };
    const done = await eventually(
      async () => {
        const b = await batch(nodes[0]!);
        return b.endedAt !== null && b;
      },
      15_000,
      'the batch to end',
    );
    await stopWorkers(list);
    expect(ledger.errors).toEqual([]);
    expect(ledger.refused).toEqual([]);
    expect(ledger.mostOut.get('rotate')).toBeLessThanOrEqual(2);
    expect(done).toMatchObject({ status: 'success', counts: { success: AGENTS } });
    // Each agent ran its own job, once.
    expect([...ledger.handed].filter(([, to]) => to.length !== 1)).toEqual([]);
    for (const job of done.jobs) {
      expect(ledger.handed.get(job.jobId)).toEqual([job.agentId]);
      expect(list.find((w) => w.agent.agentId === job.agentId)!.ran).toEqual([job.jobId]);
    }
    // Ended after its last job, and the same whichever coordinator answers.
    const last = done.jobs
      .map((j) => j.finishedAt)
      .sort()
      .at(-1)!;
    expect(done.endedAt! >= last).toBe(true);
    for (const node of nodes) expect((await batch(node)).endedAt).toBe(done.endedAt);
  });
});

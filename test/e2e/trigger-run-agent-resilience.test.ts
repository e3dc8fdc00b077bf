import fs from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  enrollAgentStateDir,
  killProcessesWithEnv,
  processesWithEnv,
  startCuttableProxy,
  startDaemonProcess,
  stopDaemonProcess,
  writeWorkflowFile,
  type AgentStateDir,
  type CuttableProxy,
  type DaemonProcess,
} from '../helpers/agent-daemon.js';
import { eventually, sleep } from '../helpers/poll.js';
import { makeTempDir, startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import { runnableTrigger } from '../helpers/trigger-runs.js';

/**
 * Trigger runs through real agent processes when things go wrong: the coordinator restarts with
 * jobs pending, the stream drops while jobs are created, the agent's queue is full, the agent is
 * killed mid-job. A job is never lost, never run twice, and never stays running.
 */

const ENV = { DROVER_STREAM_PING_MS: '500', DROVER_AGENT_DISCONNECT_GRACE_MS: '1000' };
const TERMINAL = ['success', 'failed', 'timed_out', 'cancelled', 'rejected'];

const cleanups: (() => Promise<void> | void)[] = [];
const daemons: DaemonProcess[] = [];
const jobIds: string[] = [];
afterEach(async () => {
  for (const daemon of daemons.splice(0)) await stopDaemonProcess(daemon);
});
afterAll(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  for (const id of jobIds) killProcessesWithEnv('DROVER_JOB_ID', id);
});

async function coordinator(dataDir?: string): Promise<TestCoordinator> {
  const t = await startTestCoordinator({ env: ENV, ...(dataDir ? { dataDir } : {}) });
  cleanups.push(() => t.close());
  return t;
}

async function proxyTo(url: string): Promise<CuttableProxy> {
  const proxy = await startCuttableProxy(url);
  cleanups.push(() => proxy.close());
  return proxy;
}

async function enrolled(t: TestCoordinator, url?: string): Promise<AgentStateDir> {
  const a = await enrollAgentStateDir(t, url);
  cleanups.push(() => fs.rmSync(path.dirname(a.stateDir), { recursive: true, force: true }));
  return a;
}

function start(stateDir: string, args: string[] = []): DaemonProcess {
  const daemon = startDaemonProcess(stateDir, args);
  daemons.push(daemon);
  return daemon;
}

function tempDir(): string {
  const dir = makeTempDir('drover-resilience-');
  cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/**
 * A workflow whose one step appends the job id to `runsFile`, after `sleepSeconds`, or once the
 * file `gate` exists (at most 30 s) when `gate` is given.
 */
function countingWorkflow(stateDir: string, name: string, runsFile: string, sleepSeconds = 0, gate?: string): void {
  const pause = gate
    ? `for i in $(seq 600); do [ -f ${gate} ] && break; sleep 0.05; done; `
    : sleepSeconds > 0
      ? `sleep ${sleepSeconds}; `
      : '';
  writeWorkflowFile(
    stateDir,
    name,
    `name: ${name}\nsteps:\n  - run: ${pause}echo "$DROVER_JOB_ID" >> ${runsFile}; echo "ran=yes" >> "$DROVER_OUTPUT"\n    shell: true\n`,
  );
}

function runsOf(runsFile: string): string[] {
  try {
    return fs.readFileSync(runsFile, 'utf8').split('\n').filter(Boolean);
  } catch {
    return [];
  }
}

/** Waits until the agent holds the stream and has reported `workflowName`. */
async function ready(t: TestCoordinator, daemon: DaemonProcess, a: AgentStateDir, workflowName: string) {
  await eventually(() => daemon.status()?.connection === 'connected', 30_000, 'the daemon to connect');
  await eventually(
    async () => {
      const agent = await t.owner.get(`/orgs/${t.orgId}/agents/${a.agentId}`);
      const workflows = await t.owner.get(`/orgs/${t.orgId}/workflows`);
      return (
        agent.body.status === 'connected' &&
        workflows.body.some(
          (w: { agentId: string; name: string }) => w.agentId === a.agentId && w.name === workflowName,
        )
      );
    },
    15_000,
    'the agent to be connected with its workflow',
  );
}

/** An async run; returns the job id (expects 202). */
async function run(t: TestCoordinator, tr: { id: string; token: string }, body: unknown = {}): Promise<string> {
  const res = await t.api.post(`/triggers/${tr.id}/run`, { token: tr.token, body });
  expect(res.status, res.text).toBe(202);
  jobIds.push(res.body.jobId);
  return res.body.jobId;
}

async function job(t: TestCoordinator, id: string): Promise<Record<string, any>> {
  const res = await t.owner.get(`/jobs/${id}`);
  expect(res.status, res.text).toBe(200);
  return res.body;
}

/**
 * Runs one more job and waits for it: the agent gets its jobs in order and runs them one at a
 * time, so once this one has run, any job run twice would have run again by now.
 */
async function laterJobRan(t: TestCoordinator, tr: { id: string; token: string }): Promise<string> {
  const id = await run(t, tr, { ref: 'witness' });
  expect(await settled(t, id)).toMatchObject({ status: 'success' });
  return id;
}

function settled(t: TestCoordinator, id: string, timeoutMs = 30_000): Promise<Record<string, any>> {
  return eventually(
    async () => {
      const j = await job(t, id);
      return TERMINAL.includes(j.status) ? j : undefined;
    },
    timeoutMs,
    `job ${id} to end`,
  );
}

describe('a coordinator restarted with pending jobs', () => {
  it('delivers every pending job to the agent after the restart, and each runs exactly once', async () => {
    const dataDir = tempDir();
    const runsFile = path.join(tempDir(), 'runs.log');
    const first = await coordinator(dataDir);
    // The agent reaches the coordinator through a proxy: its address stays while the port changes.
    const proxy = await proxyTo(first.url);
    const a = await enrolled(first, proxy.url);
    countingWorkflow(a.stateDir, 'count', runsFile);
    const daemon = start(a.stateDir);
    await ready(first, daemon, a, 'count');
    const tr = await runnableTrigger(first, a.agentId, 'count');

    await proxy.cut();
    await eventually(() => daemon.status()?.connection !== 'connected', 10_000, 'the agent to lose the stream');
    const ids = [await run(first, tr), await run(first, tr), await run(first, tr)];
    for (const id of ids) expect((await job(first, id)).status).toBe('pending');
    await first.close();

    const second = await coordinator(dataDir);
    proxy.retarget(second.url);
    await proxy.restore();
    for (const id of ids) {
      expect(await settled(second, id)).toMatchObject({ status: 'success', exitCode: 0, output: { ran: 'yes' } });
    }
    const later = await laterJobRan(second, tr);
    expect(runsOf(runsFile).sort()).toEqual([...ids, later].sort());
    const listed = await second.owner.get(`/orgs/${second.orgId}/jobs?triggerId=${tr.id}`);
    expect(listed.body.map((j: { status: string }) => j.status)).toEqual(['success', 'success', 'success', 'success']);
  }, 60_000);
});

describe('with one coordinator', () => {
  let t: TestCoordinator;
  beforeAll(async () => {
    t = await coordinator();
  });

  it('loses no job and runs none twice when the stream drops while jobs are created', async () => {
    const runsFile = path.join(tempDir(), 'runs.log');
    const proxy = await proxyTo(t.url);
    const a = await enrolled(t, proxy.url);
    countingWorkflow(a.stateDir, 'tick', runsFile, 0.2);
    const daemon = start(a.stateDir, ['--queue-capacity', '50']);
    await ready(t, daemon, a, 'tick');
    const tr = await runnableTrigger(t, a.agentId, 'tick');

    const ids: string[] = [];
    for (let i = 0; i < 4; i++) ids.push(await run(t, tr, { ref: `before-${i}` }));
    // Cut while a job runs and others wait in the agent's queue.
    await eventually(async () => (await job(t, ids[0]!)).status === 'running', 10_000, 'the first job to run');
    await proxy.cut();
    await eventually(() => daemon.status()?.connection !== 'connected', 10_000, 'the agent to lose the stream');
    for (let i = 0; i < 4; i++) ids.push(await run(t, tr, { ref: `during-${i}` }));
    for (const id of ids.slice(4)) expect((await job(t, id)).status).toBe('pending');
    // Real time: the outage's shape (how long the link stays down, when it drops again) is the scenario.
    await sleep(500);
    await proxy.restore();
    for (let i = 0; i < 4; i++) ids.push(await run(t, tr, { ref: `after-${i}` }));
    // A second, shorter cut while the backlog drains.
    await sleep(300);
    await proxy.cut();
    await sleep(300);
    await proxy.restore();

    for (const id of ids) expect(await settled(t, id, 40_000)).toMatchObject({ status: 'success', exitCode: 0 });
    ids.push(await laterJobRan(t, tr));
    const runs = runsOf(runsFile);
    expect(runs).toHaveLength(ids.length);
    expect(new Set(runs)).toEqual(new Set(ids));
    const listed = await t.owner.get(`/orgs/${t.orgId}/jobs?triggerId=${tr.id}`);
    expect(listed.body).toHaveLength(ids.length);
  }, 90_000);

  it('rejects the calls that find the agent queue full, and runs the others', async () => {
    const dir = tempDir();
    const runsFile = path.join(dir, 'runs.log');
    const gate = path.join(dir, 'gate');
    const a = await enrolled(t);
    // The first job runs until the test opens the gate, so the queue stays full meanwhile.
    countingWorkflow(a.stateDir, 'slow', runsFile, 0, gate);
    const daemon = start(a.stateDir, ['--queue-capacity', '2']);
    await ready(t, daemon, a, 'slow');
    const tr = await runnableTrigger(t, a.agentId, 'slow');

    const first = await run(t, tr);
    await eventually(async () => (await job(t, first)).status === 'running', 10_000, 'the first job to run');
    const second = await run(t, tr);
    await eventually(async () => (await job(t, second)).status === 'queued', 10_000, 'the second job to wait');
    const extra = [await run(t, tr), await run(t, tr), await run(t, tr)];

    const listRejected = async () => {
      const res = await t.owner.get(`/orgs/${t.orgId}/jobs?triggerId=${tr.id}&status=rejected`);
      expect(res.status, res.text).toBe(200);
      return res.body as Record<string, any>[];
    };
    const rejected = await eventually(
      async () => {
        const list = await listRejected();
        return list.length === extra.length ? list : undefined;
      },
      10_000,
      'the extra jobs to be rejected',
    );
    expect(rejected.map((j) => j.id).sort()).toEqual([...extra].sort());
    for (const j of rejected) {
      expect(j.errorMessage).toBe("the agent's job queue is full: it already holds 2 jobs, its capacity");
      expect(j.startedAt).toBeNull();
    }
    expect((await job(t, first)).status).toBe('running');
    expect((await job(t, second)).status).toBe('queued');
    fs.writeFileSync(gate, '');
    expect(await settled(t, first)).toMatchObject({ status: 'success' });
    expect(await settled(t, second)).toMatchObject({ status: 'success' });
    expect(runsOf(runsFile)).toEqual([first, second]);
    const all = await t.owner.get(`/orgs/${t.orgId}/jobs?triggerId=${tr.id}`);
    expect(all.body.map((j: { status: string }) => j.status).sort()).toEqual([
      'rejected',
      'rejected',
      'rejected',
      'success',
      'success',
    ]);
  }, 60_000);

  it('ends a job whose agent was killed (kill -9) mid-job as failed after the agent restarts', async () => {
    const a = await enrolled(t);
    writeWorkflowFile(
      a.stateDir,
      'hang',
      'name: hang\nsteps:\n  - name: wait\n    run: echo started; sleep 60\n    shell: true\n',
    );
    const daemon = start(a.stateDir);
    await ready(t, daemon, a, 'hang');
    const tr = await runnableTrigger(t, a.agentId, 'hang');

    const id = await run(t, tr);
    await eventually(
      async () => (await job(t, id)).logs.some((l: { text: string }) => l.text === 'started'),
      10_000,
      'the step to start',
    );
    await daemon.kill9();
    expect((await job(t, id)).status).toBe('running');

    const restarted = start(a.stateDir);
    const done = await settled(t, id);
    expect(done).toMatchObject({
      status: 'failed',
      exitCode: null,
      errorMessage: expect.stringMatching(/interrupted: the agent stopped while the job was running/),
    });
    // The restarted agent kills what the interrupted step left running.
    await eventually(() => processesWithEnv('DROVER_JOB_ID', id).length === 0, 10_000, 'the orphaned step to be gone');
    await ready(t, restarted, a, 'hang');
    expect((await job(t, id)).status).toBe('failed');
  }, 60_000);

  it('never runs a job twice when its agent is killed (kill -9) at any moment of its dispatch', async () => {
    // The moments after the call, in ms: before the job reaches the agent, while its start is
    // reported and its first step held ready, around the exec, after the step ran.
    const delaysMs = [0, 2, 4, 6, 9, 14, 25];
    const dir = tempDir();
    const runsFile = path.join(dir, 'runs.log');
    const a = await enrolled(t);
    countingWorkflow(a.stateDir, 'count', runsFile);
    let daemon = start(a.stateDir);
    await ready(t, daemon, a, 'count');
    const tr = await runnableTrigger(t, a.agentId, 'count');
    const outcomes: Record<string, unknown>[] = [];
    for (const delayMs of delaysMs) {
      const id = await run(t, tr);
      await sleep(delayMs);
      await daemon.kill9();
      daemon = start(a.stateDir);
      const done = await settled(t, id);
      const runs = runsOf(runsFile).filter((r) => r === id).length;
      outcomes.push({ delayMs, status: done.status, runs });
      // Run once and succeeded (redelivered, or it had finished), or at most once and ended as
      // lost, interrupted, or not run (killed while its first journal entry was being written: a
      // damaged entry is never taken as a job not seen), whatever the moment.
      if (done.status === 'success') expect(runs, JSON.stringify(outcomes)).toBe(1);
      else {
        expect(runs, JSON.stringify(outcomes)).toBeLessThanOrEqual(1);
        expect(done.errorMessage).toMatch(/lost|interrupted|journal entry for this job was damaged/);
      }
    }
    // Once a later job has run, a job run twice would have shown by now.
    await ready(t, daemon, a, 'count');
    await laterJobRan(t, tr);
    const counted = runsOf(runsFile).filter((r) => jobIds.includes(r));
    expect(new Set(counted).size, JSON.stringify(outcomes)).toBe(counted.length);
  }, 120_000);
});

import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  enrollAgentStateDir,
  isAlive,
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
import { makeTempDir, startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import type { ApiClient, ApiResponse } from '../helpers/http.js';
import { addUser, outsider } from '../helpers/members.js';
import { eventually } from '../helpers/poll.js';
import { runnableTrigger } from '../helpers/trigger-runs.js';

/**
 * `POST /v1/jobs/:id/cancel` end to end (docs/jobs.md, "Cancellation"): a real coordinator and a
 * real `drover-agent run` child process reaching it through a proxy the test can cut. The agent's
 * queue holds two jobs (one running, one waiting); a job created while its link is cut waits on
 * the coordinator (pending).
 */

const STUBBORN_TREE = fileURLToPath(new URL('../../agent/test/fixtures/stubborn-tree.sh', import.meta.url));

let t: TestCoordinator;
let proxy: CuttableProxy;
let a: AgentStateDir;
let daemon: DaemonProcess;
let work: string;
let member: ApiClient;
const jobIds: string[] = [];
const triggers = new Map<string, { id: string; token: string }>();

afterAll(async () => {
  await stopDaemonProcess(daemon);
  await proxy?.close();
  await t?.close();
  for (const id of jobIds) killProcessesWithEnv('DROVER_JOB_ID', id);
  if (a) fs.rmSync(path.dirname(a.stateDir), { recursive: true, force: true });
  if (work) fs.rmSync(work, { recursive: true, force: true });
});

beforeAll(async () => {
  t = await startTestCoordinator({
    env: { DROVER_STREAM_PING_MS: '500', DROVER_AGENT_DISCONNECT_GRACE_MS: '100' },
  });
  work = makeTempDir('drover-job-cancel-');
  proxy = await startCuttableProxy(t.url);
  a = await enrollAgentStateDir(t, proxy.url);
  const runs = path.join(work, 'runs');
  const gates = path.join(work, 'gates');
  fs.mkdirSync(gates);
  const workflows: Record<string, string[]> = {
    // Records that it ran, then waits (at most a minute) for the file its `gate` param names.
    gated: [
      'name: gated',
      'params:',
      '  - {name: gate, type: string, required: true}',
      'steps:',
      `  - run: echo "$DROVER_JOB_ID" >> ${runs}; echo waiting; for i in $(seq 1200); do [ -f "${gates}/$DROVER_PARAM_GATE" ] && break; sleep 0.05; done; echo released`,
      '    shell: true',
    ],
    quick: ['name: quick', 'steps:', `  - run: echo "$DROVER_JOB_ID" >> ${runs}`, '    shell: true'],
    // Its step and the step's child ignore SIGTERM: only the SIGKILL after the grace ends them.
    stubborn: ['name: stubborn', 'cancelGrace: 1s', 'steps:', `  - run: ${STUBBORN_TREE}`, '    args: [tree.pids]'],
  };
  for (const [name, lines] of Object.entries(workflows)) writeWorkflowFile(a.stateDir, name, `${lines.join('\n')}\n`);
  daemon = startDaemonProcess(a.stateDir, ['--queue-capacity', '2']);
  await eventually(
    async () => {
      const res = await t.owner.get(`/orgs/${t.orgId}/workflows`);
      return res.body.filter((w: { agentId: string }) => w.agentId === a.agentId).length === 3;
    },
    30_000,
    'the agent to connect and report its workflows',
  );
  for (const name of ['gated', 'quick', 'stubborn']) triggers.set(name, await runnableTrigger(t, a.agentId, name));
  triggers.set(
    'gated-sync',
    await runnableTrigger(t, a.agentId, 'gated', { responseMode: 'sync', responseTimeoutMs: 60_000 }),
  );
  ({ client: member } = await addUser(t.owner, t.orgId, 'member@example.test'));
}, 60_000);

async function run(name: string, params: Record<string, unknown> = {}): Promise<string> {
  const trigger = triggers.get(name)!;
  const res = await t.api.post(`/triggers/${trigger.id}/run`, { token: trigger.token, body: { params } });
  expect(res.status, res.text).toBe(202);
  jobIds.push(res.body.jobId);
  return res.body.jobId as string;
}

const job = async (id: string) => (await t.owner.get(`/jobs/${id}`)).body as Record<string, any>;

async function jobWhen(id: string, check: (j: Record<string, any>) => boolean, what: string, timeoutMs = 20_000) {
  let last: Record<string, any> | undefined;
  return eventually(
    async () => {
      last = await job(id);
      return check(last) && last;
    },
    timeoutMs,
    () => `job ${id} ${what}; it is ${JSON.stringify(last)}`,
  );
}

const cancel = (id: string, client: ApiClient = t.owner): Promise<ApiResponse> => client.post(`/jobs/${id}/cancel`);
const open = (gate: string) => fs.writeFileSync(path.join(work, 'gates', gate), '');
const ranJobs = () => fs.readFileSync(path.join(work, 'runs'), 'utf8').split('\n').filter(Boolean);
/** Index of the first agent log record about `jobId` matching `msg`, or -1. */
const logIndex = (jobId: string, msg: RegExp) =>
  daemon.logRecords().findIndex((r) => r.jobId === jobId && msg.test(String(r.msg)));
/** Whether the agent confirmed a cancel is not in the API: read from the database. */
const unconfirmedCancels = async () =>
  (await t.sql.get<{ n: number }>(
    'SELECT count(*) AS n FROM jobs WHERE cancel_requested_at IS NOT NULL AND cancel_acked_at IS NULL',
  ))!.n;

describe('cancelling a job that has not started', () => {
  it('cancels a pending and a queued job at once; neither ever starts, and the agent frees its queue', async () => {
    const running = await run('gated', { gate: 'first' });
    await jobWhen(running, (j) => j.status === 'running', 'running');
    const queued = await run('quick');
    await jobWhen(queued, (j) => j.status === 'queued', 'queued in the agent');
    // A job the agent never got: created while its link is cut (a live job goes to a connected
    // agent at once, and one whose queue is full refuses it), cancelled before the link is back.
    await proxy.cut();
    await eventually(
      async () => (await t.owner.get(`/orgs/${t.orgId}/agents/${a.agentId}`)).body.status === 'disconnected',
      15_000,
      'the coordinator to see the agent gone',
    );
    const pending = await run('quick');
    expect((await job(pending)).status).toBe('pending');

    for (const id of [pending, queued]) {
      const res = await cancel(id);
      expect(res.status, res.text).toBe(200);
      expect(res.body).toMatchObject({
        id,
        status: 'cancelled',
        errorMessage: 'cancelled: a user cancelled the job before it started',
        startedAt: null,
        finishedAt: expect.any(String),
        cancelRequestedAt: expect.any(String),
      });
    }
    await proxy.restore();
    // The agent took the queued one out of its queue and confirmed; the pending one it never held.
    await daemon.waitForLog((r) => r.jobId === queued && r.msg === 'cancel received: the job will not run');
    await eventually(async () => (await unconfirmedCancels()) === 0, 15_000, 'the agent to confirm both cancels');

    open('first');
    await jobWhen(running, (j) => j.status === 'success', 'success');
    const after = await run('quick');
    await jobWhen(after, (j) => j.status === 'success', 'success');
    expect(ranJobs()).toEqual([running, after]);
    for (const id of [pending, queued]) {
      expect(await job(id)).toMatchObject({ status: 'cancelled', startedAt: null });
    }
    const audit = await t.owner.get(`/orgs/${t.orgId}/audit?action=job.cancel`);
    expect(audit.body.map((e: { targetId: string }) => e.targetId).sort()).toEqual([pending, queued].sort());
    // Each entry names its job by number too: the ids of jobs of the same minute begin alike.
    for (const entry of audit.body as { targetId: string; metadata: { jobNumber: number } }[]) {
      expect(entry.metadata.jobNumber).toBe((await job(entry.targetId)).number);
    }
  });

  it('refuses to cancel a job that already ended (409), whatever its status', async () => {
    const done = await run('quick');
    await jobWhen(done, (j) => j.status === 'success', 'success');
    const res = await cancel(done);
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ code: 'conflict', details: { jobId: done, status: 'success' } });
    expect(res.body.message).toMatch(/already ended \(success\)/);
    expect((await job(done)).cancelRequestedAt).toBeNull();
  });
});

describe('cancelling a running job', () => {
  it('stops a step whose whole process tree ignores SIGTERM: SIGKILL after the grace, and nothing is left', async () => {
    const id = await run('stubborn');
    const pidFile = path.join(a.stateDir, 'jobs', id, 'workspace', 'tree.pids');
    await eventually(() => fs.existsSync(pidFile), 20_000, 'the step to write its pids');
    const pids = fs.readFileSync(pidFile, 'utf8').trim().split(' ').map(Number);
    expect(pids).toHaveLength(2);
    expect(pids.every(isAlive)).toBe(true);

    // Any member of the organization may cancel; the job stays running until the agent reports.
    const res = await cancel(id, member);
    expect(res.status, res.text).toBe(202);
    expect(res.body).toMatchObject({ id, status: 'running', cancelRequestedAt: expect.any(String) });
    const again = await cancel(id);
    expect(again.status).toBe(202);

    const ended = await jobWhen(id, (j) => j.status === 'cancelled', 'cancelled by its agent');
    expect(ended).toMatchObject({
      exitCode: null,
      errorMessage: 'cancelled: a user cancelled the job; step 1 was stopped',
    });
    expect(ended.logs.map((l: { text: string }) => l.text)).toContain(
      'job finished: cancelled: a user cancelled the job; step 1 was stopped',
    );
    expect(pids.filter(isAlive)).toEqual([]);
    expect(processesWithEnv('DROVER_JOB_ID', id)).toEqual([]);
    const audit = await t.owner.get(`/orgs/${t.orgId}/audit?action=job.cancel`);
    expect(audit.body.filter((e: { targetId: string }) => e.targetId === id)).toHaveLength(1);
  });

  it('answers a sync caller waiting on the job with status cancelled', async () => {
    const trigger = triggers.get('gated-sync')!;
    const waiting = t.api.post(`/triggers/${trigger.id}/run`, {
      token: trigger.token,
      body: { params: { gate: 'never' } },
    });
    const id = await eventually(async () => {
      const list = await t.owner.get(`/orgs/${t.orgId}/jobs?triggerId=${trigger.id}`);
      return list.body[0]?.id as string | undefined;
    });
    jobIds.push(id);
    await jobWhen(id, (j) => j.status === 'running', 'running');
    expect((await cancel(id)).status).toBe(202);
    const res = await waiting;
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ jobId: id, status: 'cancelled', exitCode: null });
    expect(res.body.timedOut).toBeUndefined();
    expect(processesWithEnv('DROVER_JOB_ID', id)).toEqual([]);
  });
});

describe('who may cancel', () => {
  it('refuses an anonymous caller (401), an API token (401), and a user of another organization (404)', async () => {
    const id = await run('quick');
    await jobWhen(id, (j) => j.status === 'success', 'success');
    expect((await t.api.post(`/jobs/${id}/cancel`)).status).toBe(401);
    expect((await t.api.post(`/jobs/${id}/cancel`, { token: triggers.get('quick')!.token })).status).toBe(401);
    const stranger = await outsider(t.owner, t.orgId, 'stranger@example.test');
    const res = await cancel(id, stranger.client);
    expect(res.status).toBe(404);
    expect(res.body.code).toBe('not_found');
    expect((await cancel('00000000-0000-4000-8000-000000000000')).status).toBe(404);
  });
});

describe('an agent offline at cancel time', () => {
  it('gets the cancel when it reconnects, before any new job, and stops the job then', async () => {
    const id = await run('gated', { gate: 'never' });
    await jobWhen(id, (j) => j.status === 'running', 'running');
    await proxy.cut();
    await eventually(
      async () => (await t.owner.get(`/orgs/${t.orgId}/agents/${a.agentId}`)).body.status === 'disconnected',
      15_000,
      'the coordinator to see the agent gone',
    );
    const res = await cancel(id);
    expect(res.status, res.text).toBe(202);
    const next = await run('quick'); // created while the agent is away: it waits for it
    expect(processesWithEnv('DROVER_JOB_ID', id).length).toBeGreaterThan(0); // still running out there

    await proxy.restore();
    const ended = await jobWhen(id, (j) => j.status === 'cancelled', 'cancelled after the reconnect', 30_000);
    expect(ended.errorMessage).toBe('cancelled: a user cancelled the job; step 1 was stopped');
    await jobWhen(next, (j) => j.status === 'success', 'success');
    const stopped = logIndex(id, /^cancel received: stopping the job/);
    const received = daemon.logRecords().findIndex((r) => r.jobId === next);
    expect(stopped).toBeGreaterThanOrEqual(0);
    expect(received).toBeGreaterThan(stopped);
    expect(processesWithEnv('DROVER_JOB_ID', id)).toEqual([]);
    expect(await unconfirmedCancels()).toBe(0);
  });
});

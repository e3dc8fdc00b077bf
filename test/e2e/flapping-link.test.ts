import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  enrollAgentStateDir,
  killProcessesWithEnv,
  startCuttableProxy,
  startDaemonProcess,
  stopDaemonProcess,
  writeWorkflowFile,
  type DaemonProcess,
} from '../helpers/agent-daemon.js';
import { eventually, sleep } from '../helpers/poll.js';
import { makeTempDir, startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import { runnableTrigger } from '../helpers/trigger-runs.js';

/**
 * A link that drops every connection every 1.5 s while runs keep coming (docs/jobs.md, "Delivery
 * and redelivery"; docs/agent.md, reconnects): the agent reconnects promptly after each cut of a
 * healthy stream, the jobs that waited for it are handed over as its queue has room, and so
 * nearly every run succeeds, none is lost and none runs twice.
 */

const TERMINAL = ['success', 'failed', 'timed_out', 'cancelled', 'rejected'];
const cleanups: (() => Promise<void> | void)[] = [];
const jobIds: string[] = [];
let daemon: DaemonProcess | undefined;
afterAll(async () => {
  await stopDaemonProcess(daemon);
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  for (const id of jobIds) killProcessesWithEnv('DROVER_JOB_ID', id);
});

describe('a flapping link between agent and coordinator', () => {
  it('loses no job, runs none twice, and lets at least 95% of the runs succeed', async () => {
    const t: TestCoordinator = await startTestCoordinator({
      env: { DROVER_STREAM_PING_MS: '500', DROVER_AGENT_DISCONNECT_GRACE_MS: '5000' },
    });
    cleanups.push(() => t.close());
    const proxy = await startCuttableProxy(t.url);
    cleanups.push(() => proxy.close());
    const a = await enrollAgentStateDir(t, proxy.url);
    cleanups.push(() => fs.rmSync(path.dirname(a.stateDir), { recursive: true, force: true }));
    const dir = makeTempDir('drover-flapping-');
    cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
    const runsFile = path.join(dir, 'runs');
    writeWorkflowFile(
      a.stateDir,
      'quick',
      `name: quick\nsteps:\n  - run: echo "$DROVER_JOB_ID" >> ${runsFile}\n    shell: true\n`,
    );
    daemon = startDaemonProcess(a.stateDir);
    await eventually(
      async () => {
        const workflows = await t.owner.get(`/orgs/${t.orgId}/workflows`);
        return workflows.body.some((w: { agentId: string; name: string }) => w.agentId === a.agentId);
      },
      30_000,
      'the agent to report its workflow',
    );
    const trigger = await runnableTrigger(t, a.agentId, 'quick');

    // 24 s of a link cut every 1.5 s, and a run every 300 ms.
    const cutter = setInterval(() => proxy.reset(), 1_500);
    const until = Date.now() + 24_000;
    try {
      while (Date.now() < until) {
        const res = await t.api.post(`/triggers/${trigger.id}/run`, { token: trigger.token, body: {} });
        expect(res.status, res.text).toBe(202);
        jobIds.push(res.body.jobId);
        await sleep(300); // real time: the pace of runs against the link's cuts is the scenario
      }
    } finally {
      clearInterval(cutter);
    }

    const jobs = await eventually(
      async () => {
        const all = await Promise.all(jobIds.map(async (id) => (await t.owner.get(`/jobs/${id}`)).body));
        return all.every((j) => TERMINAL.includes(j.status)) ? all : undefined;
      },
      60_000,
      'every job to end',
    );
    const statuses = jobs.map((j) => `${j.status}${j.errorMessage ? `: ${j.errorMessage}` : ''}`);
    const succeeded = jobs.filter((j) => j.status === 'success').length;
    expect(succeeded / jobs.length, statuses.filter((s) => s !== 'success').join('\n')).toBeGreaterThanOrEqual(0.95);
    const runs = fs.readFileSync(runsFile, 'utf8').split('\n').filter(Boolean);
    expect(new Set(runs).size, 'a job ran twice').toBe(runs.length);
    const ran = new Set(runs);
    for (const j of jobs) if (j.status === 'success') expect(ran.has(j.id)).toBe(true);
    expect(jobIds.length).toBeGreaterThanOrEqual(60);
  }, 150_000);
});

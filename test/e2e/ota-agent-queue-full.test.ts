import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  enrollAgentStateDir,
  killProcessesWithEnv,
  startDaemonProcess,
  stopDaemonProcess,
  writeWorkflowFile,
  type AgentStateDir,
  type DaemonProcess,
} from '../helpers/agent-daemon.js';
import { eventually } from '../helpers/poll.js';
import { makeTempDir, startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import { artifactUploader, bindDevices, createApp, release, uploadArtifact } from '../helpers/ota.js';
import { bindingWhen, installedVersion, updateJobsOf, writeUpdateWorkflow } from '../helpers/ota-agent.js';
import { issueApiToken } from '../helpers/tokens.js';

/**
 * A deploy event that finds the agent's queue full is dropped with the log line
 * `job queue full; rejecting` and not reported (spec, Limits rule 2): the update job stays
 * `pending` on the coordinator, and the agent's pull fallback (`--deploy-poll-interval`) gets it
 * pushed again once there is room. A real agent with `--queue-capacity 1` is kept busy by a job
 * that waits for a file.
 */

let t: TestCoordinator;
let work: string;
let dir: AgentStateDir;
let daemon: DaemonProcess | undefined;
let gateJobId: string | undefined;
const marks = () => path.join(work, 'marks');

afterAll(async () => {
  await stopDaemonProcess(daemon);
  await t?.close();
  if (gateJobId) killProcessesWithEnv('DROVER_JOB_ID', gateJobId);
  if (dir) fs.rmSync(path.dirname(dir.stateDir), { recursive: true, force: true });
  if (work) fs.rmSync(work, { recursive: true, force: true });
});

beforeAll(async () => {
  t = await startTestCoordinator({ env: { DROVER_STREAM_PING_MS: '500' } });
  work = makeTempDir('drover-ota-queue-full-');
  dir = await enrollAgentStateDir(t);
  writeUpdateWorkflow(dir.stateDir, marks());
  writeWorkflowFile(
    dir.stateDir,
    'gate',
    [
      'name: gate',
      'steps:',
      `  - run: for i in $(seq 600); do [ -f "${work}/open" ] && break; sleep 0.05; done`,
      '    shell: true',
      '',
    ].join('\n'),
  );
  daemon = startDaemonProcess(dir.stateDir, ['--queue-capacity', '1', '--deploy-poll-interval', '1s']);
  await eventually(
    async () => {
      const res = await t.owner.get<{ agentId: string }[]>(`/orgs/${t.orgId}/workflows`);
      return res.body.filter((w) => w.agentId === dir.agentId).length === 2;
    },
    30_000,
    'the agent to report its workflows',
  );
}, 60_000);

describe('a deploy event on a full queue', () => {
  it('is dropped with "job queue full; rejecting", then recovered by the pull fallback once the queue has room', async () => {
    const trigger = await t.owner.post(`/orgs/${t.orgId}/triggers`, {
      body: { name: 'gate', agentId: dir.agentId, scopeType: 'workflow', workflowName: 'gate', responseMode: 'async' },
    });
    expect(trigger.status, trigger.text).toBe(201);
    const { token } = await issueApiToken(t.owner, t.orgId, [{ type: 'trigger', triggerIds: [trigger.body.id] }]);
    const run = await t.api.post(`/triggers/${trigger.body.id}/run`, { token, body: { params: {} } });
    expect(run.status, run.text).toBe(202);
    gateJobId = run.body.jobId;
    await daemon!.waitForLog((r) => r.jobId === gateJobId && /started/.test(r.msg));

    const app = await createApp(t.owner, t.orgId, { slug: 'busy', updateWorkflowName: 'apply-update' });
    const [device] = await bindDevices(t.owner, t.orgId, app.id, [dir.agentId]);
    const artifactFileId = await uploadArtifact(await artifactUploader(t), 'busy 1.0.0');
    const r = await release(t.owner, t.orgId, app.id, { version: '1.0.0', artifactFileId });

    const dropped = await daemon!.waitForLog(
      (rec) => rec.msg === 'job queue full; rejecting' && rec.event === 'deploy',
    );
    expect(dropped.level).toBe(40);
    const [job] = await updateJobsOf(t, dir.agentId);
    expect(job).toMatchObject({ status: 'pending', params: { release_id: r.id } }); // not reported: still pending
    // While the queue stays full, every re-push is dropped again and the job stays pending.
    const drops = () =>
      daemon!.logRecords().filter((rec) => rec.msg === 'job queue full; rejecting' && rec.event === 'deploy');
    await eventually(() => drops().length >= 2, 15_000, 'the deploy event pushed again, and dropped again');
    expect(await updateJobsOf(t, dir.agentId)).toMatchObject([{ id: job!.id, status: 'pending' }]);
    expect(installedVersion(marks())).toBeNull();

    fs.writeFileSync(path.join(work, 'open'), '');
    const b = await bindingWhen(
      t,
      app.id,
      device!.id,
      // The report of the install and the job's finish are two calls: wait for both.
      (x) => x.current?.releaseId === r.id && x.state === 'installed' && x.activeJobId === null,
      'installed after the queue emptied, its job ended',
    );
    expect(b.activeJobId).toBeNull();
    expect(installedVersion(marks())).toBe('1.0.0');
    // The same job, pushed again: no new one was issued.
    expect(await updateJobsOf(t, dir.agentId)).toMatchObject([{ id: job!.id, status: 'success' }]);
  });
});

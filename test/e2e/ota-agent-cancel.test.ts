import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  enrollAgentStateDir,
  killProcessesWithEnv,
  processesWithEnv,
  startDaemonProcess,
  stopDaemonProcess,
  writeWorkflowFile,
  type AgentStateDir,
  type DaemonProcess,
} from '../helpers/agent-daemon.js';
import { makeTempDir, startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import { artifactUploader, bindDevices, createApp, release, uploadArtifact } from '../helpers/ota.js';
import { bindingWhen, installedVersion, updateJobsOf } from '../helpers/ota-agent.js';
import { eventually } from '../helpers/poll.js';

/**
 * Cancelling an update job (docs/ota.md, "Cancelling an update job") with a real agent: the
 * job is stopped on the device, the binding shows the cancelled job and gets no new one until
 * a reconcile, which issues a new job that installs the release.
 */

let t: TestCoordinator;
let a: AgentStateDir;
let daemon: DaemonProcess;
let work: string;

afterAll(async () => {
  await stopDaemonProcess(daemon);
  const jobs = t && a ? await updateJobsOf(t, a.agentId) : [];
  await t?.close();
  for (const job of jobs) killProcessesWithEnv('DROVER_JOB_ID', job.id);
  if (a) fs.rmSync(path.dirname(a.stateDir), { recursive: true, force: true });
  if (work) fs.rmSync(work, { recursive: true, force: true });
});

beforeAll(async () => {
  t = await startTestCoordinator({ env: { DROVER_STREAM_PING_MS: '500' } });
  work = makeTempDir('drover-ota-cancel-');
  a = await enrollAgentStateDir(t);
  // The update workflow waits for the gate file (at most a minute), then installs.
  const gate = path.join(work, 'gate');
  writeWorkflowFile(
    a.stateDir,
    'apply-slow',
    [
      'name: apply-slow',
      'steps:',
      `  - run: for i in $(seq 1200); do [ -f ${gate} ] && break; sleep 0.05; done; printf %s "$DROVER_PARAM_VERSION" > ${work}/version`,
      '    shell: true',
      '',
    ].join('\n'),
  );
  daemon = startDaemonProcess(a.stateDir, ['--deploy-poll-interval', '1s']);
  await daemon.waitForLog((r) => /^connected to the coordinator/.test(r.msg), 30_000);
}, 60_000);

describe('cancelling an update job', () => {
  it('stops it on the device; the binding holds until a reconcile issues a new job', async () => {
    const app = await createApp(t.owner, t.orgId, { slug: 'kiosk', updateWorkflowName: 'apply-slow' });
    const [bound] = await bindDevices(t.owner, t.orgId, app.id, [a.agentId]);
    const uploader = await artifactUploader(t);
    const artifactFileId = await uploadArtifact(uploader, 'kiosk build 1.0.0', 'kiosk-1.0.0.tar.gz');
    const r1 = await release(t.owner, t.orgId, app.id, { version: '1.0.0', artifactFileId });
    const { activeJobId: first } = await bindingWhen(t, app.id, bound!.id, (b) => b.activeJobId !== null, 'a job');
    // The update workflow runs (it waits for its gate).
    await bindingWhen(t, app.id, bound!.id, (b) => b.state === 'installing', 'the device to install');
    await eventually(() => processesWithEnv('DROVER_JOB_ID', first!).length > 0, 20_000, 'the update step to run');

    const res = await t.owner.post(`/jobs/${first}/cancel`);
    expect(res.status, res.text).toBe(202);
    expect(res.body).toMatchObject({ id: first, kind: 'update', status: 'running' });
    const held = await bindingWhen(
      t,
      app.id,
      bound!.id,
      (b) => b.cancelledJobId === first,
      'the binding to show the cancelled job',
    );
    expect(held).toMatchObject({ activeJobId: null, desired: { releaseId: r1.id }, current: null });
    expect((await t.owner.get(`/jobs/${first}`)).body).toMatchObject({
      status: 'cancelled',
      errorMessage: 'cancelled: a user cancelled the job; step 1 was stopped',
    });
    expect(processesWithEnv('DROVER_JOB_ID', first!)).toEqual([]);
    // The device keeps reporting (every second): the binding still holds.
    const cancelledAt = Date.now();
    await bindingWhen(
      t,
      app.id,
      bound!.id,
      (b) => b.lastReportAt !== null && Date.parse(b.lastReportAt) > cancelledAt,
      'a report after the cancel',
    );
    expect((await updateJobsOf(t, a.agentId)).map((j) => j.id)).toEqual([first]);
    expect(installedVersion(work)).toBeNull();

    const reconciled = await t.owner.post(`/orgs/${t.orgId}/apps/${app.id}/devices/${bound!.id}/reconcile`);
    expect(reconciled.status, reconciled.text).toBe(200);
    expect(reconciled.body).toMatchObject({ cancelledJobId: null, activeJobId: expect.any(String) });
    expect(reconciled.body.activeJobId).not.toBe(first);
    fs.writeFileSync(path.join(work, 'gate'), '');
    await bindingWhen(
      t,
      app.id,
      bound!.id,
      (b) => b.current?.releaseId === r1.id && b.activeJobId === null,
      'the device to install the release',
    );
    expect(installedVersion(work)).toBe('1.0.0');
  });
});

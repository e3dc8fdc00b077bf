import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  enrollAgentStateDir,
  startDaemonProcess,
  stopDaemonProcess,
  type AgentStateDir,
  type DaemonProcess,
} from '../helpers/agent-daemon.js';
import { startBlobProxy, type BlobProxy } from '../helpers/blob-proxy.js';
import { makeTempDir, startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import { artifactUploader, bindDevices, createApp, release, uploadArtifact } from '../helpers/ota.js';
import { bindingWhen, installedVersion, updateJobsOf, writeUpdateWorkflow } from '../helpers/ota-agent.js';
import { eventually } from '../helpers/poll.js';

/**
 * An update's artifact download survives the agent being killed in its middle (docs/agent.md,
 * "Downloads"): a real coordinator whose presigned URLs go through a proxy that stalls the
 * first download, a real `drover-agent run` killed (SIGKILL) while it waits, then started again;
 * the next update job asks only for the missing bytes and installs the verified artifact.
 */

const MB = 1_000_000;
let t: TestCoordinator;
let proxy: BlobProxy;
let a: AgentStateDir;
let daemon: DaemonProcess | undefined;
let work: string;

afterAll(async () => {
  await stopDaemonProcess(daemon);
  await t?.close();
  await proxy?.close();
  if (a) fs.rmSync(path.dirname(a.stateDir), { recursive: true, force: true });
  if (work) fs.rmSync(work, { recursive: true, force: true });
});

beforeAll(async () => {
  proxy = await startBlobProxy();
  t = await startTestCoordinator({ env: { DROVER_PUBLIC_URL: proxy.url, DROVER_STREAM_PING_MS: '500' } });
  proxy.target(t.url);
  work = makeTempDir('drover-ota-resume-');
  a = await enrollAgentStateDir(t);
  writeUpdateWorkflow(a.stateDir, path.join(work, 'marks'));
  daemon = startDaemonProcess(a.stateDir, ['--deploy-poll-interval', '1s']);
  await daemon.waitForLog((r) => /^connected to the coordinator/.test(r.msg), 30_000);
}, 60_000);

describe('an artifact download', () => {
  it('cut short by killing the agent is resumed after its restart: only the missing bytes are fetched', async () => {
    const content = randomBytes(8 * MB);
    const sha256 = createHash('sha256').update(content).digest('hex');
    const app = await createApp(t.owner, t.orgId, { slug: 'kiosk' });
    const [bound] = await bindDevices(t.owner, t.orgId, app.id, [a.agentId]);
    const artifactFileId = await uploadArtifact(await artifactUploader(t), content, 'kiosk-1.0.0.bin');
    proxy.breakNext({ stallAfter: 3 * MB });
    await release(t.owner, t.orgId, app.id, { version: '1.0.0', artifactFileId });

    // The first 3 MB arrive, then nothing: the agent is killed while it waits.
    const part = path.join(a.stateDir, 'downloads', `${sha256}.part`);
    await eventually(() => fs.statSync(part, { throwIfNoEntry: false })?.size === 3 * MB, 30_000, 'the 3 MB on disk');
    await daemon!.kill9();
    expect(JSON.parse(fs.readFileSync(path.join(a.stateDir, 'downloads', `${sha256}.json`), 'utf8'))).toMatchObject({
      sha256,
      size: 8 * MB,
    });

    // Started again: the interrupted job is reported failed; a reconcile issues the next one now
    // (the coordinator's own retry would come 30 s later).
    daemon = startDaemonProcess(a.stateDir, ['--deploy-poll-interval', '1s']);
    const [first] = await eventually(
      async () => {
        const jobs = await updateJobsOf(t, a.agentId);
        return jobs.length === 1 && jobs[0]!.status === 'failed' ? jobs : undefined;
      },
      30_000,
      'the interrupted update job to be failed',
    );
    expect(first!.errorMessage).toMatch(/^interrupted: the agent stopped while the job was running/);
    // The binding says so too (the agent's report after connecting), not `idle` without a reason.
    await bindingWhen(
      t,
      app.id,
      bound!.id,
      (b) => b.state === 'failed' && b.error === first!.errorMessage,
      'the binding failed, interrupted',
    );
    const reconciled = await t.owner.post(`/orgs/${t.orgId}/apps/${app.id}/devices/${bound!.id}/reconcile`);
    expect(reconciled.status, reconciled.text).toBe(200);

    await bindingWhen(t, app.id, bound!.id, (b) => b.state === 'installed', 'the release installed', 30_000);
    expect(installedVersion(path.join(work, 'marks'))).toBe('1.0.0');
    const installed = fs.readFileSync(path.join(work, 'marks', 'artifact'));
    expect(createHash('sha256').update(installed).digest('hex')).toBe(sha256);
    expect(proxy.ranges).toEqual([undefined, `bytes=${3 * MB}-`]);
    await daemon.waitForLog(
      (r) =>
        r.msg === 'resuming the download of artifact kiosk 1.0.0 at 3 MB of 8 MB (37%), kept from an earlier attempt',
    );
    expect(fs.readdirSync(path.join(a.stateDir, 'downloads'))).toEqual([]);
  }, 90_000);
});

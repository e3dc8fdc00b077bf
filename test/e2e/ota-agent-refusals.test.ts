import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateEd25519KeyPair, privateKeyFromBase64, signRelease } from '@drover/shared';
import { enrollTestAgent } from '../helpers/agent.js';
import {
  enrollAgentStateDir,
  startDaemonProcess,
  stopDaemonProcess,
  type AgentStateDir,
  type DaemonProcess,
} from '../helpers/agent-daemon.js';
import { makeTempDir, startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import type { ApiClient } from '../helpers/http.js';
import { eventually } from '../helpers/poll.js';
import {
  artifactUploader,
  bindDevices,
  createApp,
  createRelease,
  publishRelease,
  uploadArtifact,
  type AppBody,
  type BindingBody,
} from '../helpers/ota.js';
import {
  bindingWhen,
  installedVersion,
  startTamperingProxy,
  updateJobsOf,
  writeUpdateWorkflow,
  type TamperingProxy,
} from '../helpers/ota-agent.js';
import { sha256 } from '../helpers/storage.js';

/**
 * Nothing is installed unless the signature, the match with the deploy event and the checksum
 * all pass (CONTRACT §7): a real agent reaches the coordinator through a proxy that can rewrite
 * the signed manifest in transit, and the database or the stored bytes are altered behind the
 * coordinator's back. Each refusal is reported (`refused`), logged, and installs nothing.
 */

let t: TestCoordinator;
let proxy: TamperingProxy;
let uploader: ApiClient;
let work: string;
let dir: AgentStateDir;
let daemon: DaemonProcess | undefined;
let app: AppBody;
let device: BindingBody;
const marks = () => path.join(work, 'marks');

afterAll(async () => {
  await stopDaemonProcess(daemon);
  await proxy?.close();
  await t?.close();
  if (dir) fs.rmSync(path.dirname(dir.stateDir), { recursive: true, force: true });
  if (work) fs.rmSync(work, { recursive: true, force: true });
});

beforeAll(async () => {
  t = await startTestCoordinator({ env: { DROVER_STREAM_PING_MS: '500' } });
  proxy = await startTamperingProxy(t.url);
  work = makeTempDir('drover-ota-refusals-');
  uploader = await artifactUploader(t);
  dir = await enrollAgentStateDir(t, proxy.url);
  writeUpdateWorkflow(dir.stateDir, marks());
  daemon = startDaemonProcess(dir.stateDir, ['--deploy-poll-interval', '1s']);
  await daemon.waitForLog((r) => /^connected to the coordinator/.test(r.msg), 30_000);
  app = await createApp(t.owner, t.orgId, { slug: 'signage', updateWorkflowName: 'apply-update' });
  device = (await bindDevices(t.owner, t.orgId, app.id, [dir.agentId]))[0]!;
  await bindingWhen(t, app.id, device.id, (b) => b.lastReportAt !== null, 'baseline');
}, 60_000);

async function draft(version: string) {
  const artifactFileId = await uploadArtifact(uploader, `signage ${version}`, `signage-${version}.tgz`);
  return createRelease(t.owner, t.orgId, app.id, { version, artifactFileId });
}

const refusedWith = (pattern: RegExp) =>
  bindingWhen(t, app.id, device.id, (b) => b.state === 'refused' && b.activeJobId === null, 'refused').then((b) => {
    expect(b.error).toMatch(pattern);
    return b;
  });

describe('an update the agent cannot trust', () => {
  it('is refused when the signed manifest was altered in transit, and installed once it is not', async () => {
    proxy.tamper = (body) => {
      for (const entry of body.apps) if (entry.payload.desired) entry.payload.desired.size += 1;
    };
    const r = await publishRelease(t.owner, t.orgId, app.id, (await draft('1.0.0')).id);
    const b = await refusedWith(/the manifest signature does not verify with the server key pinned at enrollment/);
    expect(b.current).toBeNull();
    expect(installedVersion(marks())).toBeNull();
    expect(proxy.tampered).toBeGreaterThan(0);
    const job = (await updateJobsOf(t, dir.agentId)).at(-1)!;
    expect(job).toMatchObject({ status: 'failed', params: { release_id: r.id } });
    expect(job.errorMessage).toMatch(/^refused: the manifest signature does not verify .*; nothing was installed$/);
    await daemon!.waitForLog((rec) => rec.level === 50 && /^deployment refused: the manifest signature/.test(rec.msg));

    proxy.tamper = null;
    const res = await t.owner.post(`/orgs/${t.orgId}/apps/${app.id}/devices/${device.id}/reconcile`);
    expect(res.status, res.text).toBe(200);
    await bindingWhen(t, app.id, device.id, (x) => x.current?.releaseId === r.id && x.state === 'installed', '1.0.0');
    expect(installedVersion(marks())).toBe('1.0.0');
  });

  it('is refused when the release checksum in the database is not the artifact’s (edited after upload)', async () => {
    const r = await draft('1.1.0');
    await t.sql.run('UPDATE releases SET checksum_sha256 = ? WHERE id = ?', sha256('something else'), r.id);
    await publishRelease(t.owner, t.orgId, app.id, r.id);
    const b = await refusedWith(/is not the one the signed release names/);
    expect(b.current).toMatchObject({ version: '1.0.0' });
    expect(installedVersion(marks())).toBe('1.0.0');
    expect((await updateJobsOf(t, dir.agentId)).at(-1)).toMatchObject({
      status: 'failed',
      params: { release_id: r.id },
    });
  });

  it('is refused when the downloaded bytes do not match the signed checksum (the stored blob was altered)', async () => {
    const r = await draft('1.2.0');
    // Where the bytes are stored is not in the API.
    const { blob_key: blobKey } = (await t.sql.get<{ blob_key: string }>(
      'SELECT blob_key FROM files WHERE id = ?',
      r.artifactFileId,
    ))!;
    fs.writeFileSync(path.join(t.dataDir, 'blobs', blobKey), 'signage 6.6.6'); // same size, other bytes
    await publishRelease(t.owner, t.orgId, app.id, r.id);
    const b = await refusedWith(/the download does not match its checksum/);
    expect(b.current).toMatchObject({ version: '1.0.0' });
    expect(installedVersion(marks())).toBe('1.0.0');
    // The agent renames its spare job directory (`.next-…`) meanwhile: a listing that met one goes again.
    const leftovers = await eventually(() => {
      try {
        return fs.readdirSync(path.join(dir.stateDir, 'jobs'), { recursive: true }).map(String);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
        throw error;
      }
    });
    expect(leftovers.filter((f) => f.includes('signage-1.2.0'))).toEqual([]); // no partial download left
  });

  it('is refused when the manifest entry was issued to another agent (copied from another device in transit)', async () => {
    const other = await enrollTestAgent(t.owner, t.orgId);
    await bindDevices(t.owner, t.orgId, app.id, [other.agentId]);
    const r = await draft('1.3.0');
    // Their entry is genuine (signed by the coordinator, for them): only the binding differs.
    const copied = (await other.request('GET', '/v1/agent/deploy/desired')).body.apps;
    proxy.tamper = (body) => {
      body.apps = copied;
    };
    await publishRelease(t.owner, t.orgId, app.id, r.id);
    const reason = `the signed manifest was issued to agent ${other.agentId}, not to this agent (${dir.agentId}): a manifest of another device; nothing was installed`;
    const b = await bindingWhen(t, app.id, device.id, (x) => x.state === 'refused' && x.error === reason, reason);
    expect(b.current).toMatchObject({ version: '1.0.0' });
    expect(installedVersion(marks())).toBe('1.0.0');
    await daemon!.waitForLog((rec) => rec.level === 50 && rec.msg === `deployment refused: ${reason}`);
    proxy.tamper = null;
  });

  it('refused, the agent’s polls report the refusal again, not idle, so no new job is asked for at once', async () => {
    const jobs = (await updateJobsOf(t, dir.agentId)).length;
    const before = await bindingWhen(t, app.id, device.id, (x) => x.state === 'refused', 'refused');
    // Two polls of the agent (one a second), each reporting: the coordinator had two chances to ask
    // again. When it may ask again (the retry backoff) is the domain's, tested in
    // coordinator/test/domain/ota/evaluation.test.ts; here, that the agent's reports never read as
    // an idle device asking for the release.
    const reportAfter = (b: BindingBody) =>
      bindingWhen(t, app.id, device.id, (x) => x.lastReportAt! > b.lastReportAt!, 'a poll');
    const after = await reportAfter(await reportAfter(before));
    // The polls report the refusal again (not `idle`, which would ask for the same release at once).
    expect(after).toMatchObject({ state: 'refused', error: before.error, activeJobId: null });
    expect((await updateJobsOf(t, dir.agentId)).length).toBe(jobs);
  });
});

describe('an application with release keys', () => {
  const k1 = generateEd25519KeyPair();
  const k2 = generateEd25519KeyPair();
  const short = (k: { publicKey: string }) => `${k.publicKey.slice(0, 8)}…`;

  it('installs a release signed by its key, and refuses keys swapped behind the coordinator’s back', async () => {
    const signed = await createApp(t.owner, t.orgId, {
      slug: 'signed-kiosk',
      updateWorkflowName: 'apply-update',
      releaseKeys: [k1.publicKey],
    });
    const binding = (await bindDevices(t.owner, t.orgId, signed.id, [dir.agentId]))[0]!;
    const signedRelease = async (version: string, sequence: number, key: typeof k1) => {
      const content = `signed-kiosk ${version}`;
      const artifactFileId = await uploadArtifact(uploader, content, `signed-kiosk-${version}.tgz`);
      const signature = signRelease(
        { app: 'signed-kiosk', version, sequence, sha256: sha256(content), size: content.length },
        privateKeyFromBase64(key.privateKey),
      );
      const res = await t.owner.post(`/orgs/${t.orgId}/apps/${signed.id}/releases`, {
        body: { version, artifactFileId, sequence, signature },
      });
      expect(res.status, res.text).toBe(201);
      return publishRelease(t.owner, t.orgId, signed.id, res.body.id);
    };

    const good = await signedRelease('3.0.0', 1, k1);
    await bindingWhen(
      t,
      signed.id,
      binding.id,
      (b) => b.current?.releaseId === good.id && b.state === 'installed',
      '3.0.0',
    );
    expect(installedVersion(marks())).toBe('3.0.0');
    await daemon!.waitForLog(
      (rec) =>
        rec.msg === `pinned the release keys of signed-kiosk on first sight: 1 key (${short(k1)}) (generation 0)`,
    );

    // Someone with the coordinator's database swaps the keys: the coordinator then takes k2's releases,
    // the device does not.
    await t.sql.run('UPDATE applications SET release_keys = ? WHERE id = ?', JSON.stringify([k2.publicKey]), signed.id);
    await signedRelease('6.6.6', 2, k2);
    const reason = `the release keys of signed-kiosk changed to 1 key (${short(k2)}) without a rotation signed by a key this device pinned (1 key (${short(k1)}), generation 0): a key swap refused; nothing was installed`;
    const b = await bindingWhen(t, signed.id, binding.id, (x) => x.state === 'refused' && x.error === reason, reason);
    expect(b.current).toMatchObject({ releaseId: good.id, version: '3.0.0' });
    expect(installedVersion(marks())).toBe('3.0.0');
    await daemon!.waitForLog((rec) => rec.level === 50 && rec.msg === `deployment refused: ${reason}`);
  });
});

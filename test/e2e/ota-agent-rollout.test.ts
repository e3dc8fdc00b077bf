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
import { makeTempDir, startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import { eventually } from '../helpers/poll.js';
import type { ApiClient } from '../helpers/http.js';
import {
  artifactUploader,
  bindDevices,
  createApp,
  listBindings,
  getBinding,
  release,
  setDeviceSelector,
  uploadArtifact,
  yankRelease,
  type AppBody,
  type BindingBody,
  type ReleaseBody,
} from '../helpers/ota.js';
import { bindingWhen, installedVersion, updateJobsOf, writeUpdateWorkflow } from '../helpers/ota-agent.js';

/**
 * Over-the-air updates end to end with two real `drover-agent run` processes (CONTRACT §7,
 * docs/ota.md, docs/agent.md "Over-the-air updates"): `a` installs whatever it is sent, `b` runs
 * with `--postpone-optional`. The update workflow records the version it installed, so each step
 * checks what really landed on the device, not only what the coordinator believes.
 */

let t: TestCoordinator;
/** The coordinator's clock: real time moved on by `offsetMs` (a maintenance window opens within the test). */
const clock = { offsetMs: 0, now: () => Date.now() + clock.offsetMs };
let uploader: ApiClient;
let work: string;
let app: AppBody;
const agents: { dir: AgentStateDir; daemon: DaemonProcess; marks: string; binding?: BindingBody }[] = [];
const releases = new Map<string, ReleaseBody>();

afterAll(async () => {
  for (const a of agents) await stopDaemonProcess(a.daemon);
  await t?.close();
  for (const a of agents) fs.rmSync(path.dirname(a.dir.stateDir), { recursive: true, force: true });
  if (work) fs.rmSync(work, { recursive: true, force: true });
});

beforeAll(async () => {
  t = await startTestCoordinator({ env: { DROVER_STREAM_PING_MS: '500' }, clock });
  work = makeTempDir('drover-ota-rollout-');
  uploader = await artifactUploader(t);
  for (const [name, args] of [
    ['a', []],
    ['b', ['--postpone-optional']],
  ] as const) {
    const dir = await enrollAgentStateDir(t);
    const marks = path.join(work, name);
    writeUpdateWorkflow(dir.stateDir, marks);
    const daemon = startDaemonProcess(dir.stateDir, ['--deploy-poll-interval', '1s', ...args]);
    agents.push({ dir, daemon, marks });
  }
  for (const a of agents) await a.daemon.waitForLog((r) => /^connected to the coordinator/.test(r.msg), 30_000);
  app = await createApp(t.owner, t.orgId, { slug: 'kiosk', updateWorkflowName: 'apply-update' });
}, 60_000);

const [A, B] = [0, 1];
const binding = (i: number) => agents[i]!.binding!;
const installed = (i: number) => installedVersion(agents[i]!.marks);
const artifactOf = (i: number) => fs.readFileSync(path.join(agents[i]!.marks, 'artifact'), 'utf8');

async function publish(version: string, fields: { updatePolicy?: string; channel?: string } = {}) {
  const artifactFileId = await uploadArtifact(uploader, `kiosk build ${version}`, `kiosk-${version}.tar.gz`);
  const r = await release(t.owner, t.orgId, app.id, { version, artifactFileId, ...fields });
  releases.set(version, r);
  return r;
}

/** Waits until the device runs `version`, as the coordinator sees it and as the workflow installed it. */
async function converged(i: number, version: string) {
  const r = releases.get(version)!;
  const b = await bindingWhen(
    t,
    app.id,
    binding(i).id,
    (x) => x.current?.releaseId === r.id && x.state === 'installed' && x.activeJobId === null,
    `device ${i} on ${version}`,
  );
  expect(installed(i)).toBe(version);
  expect(artifactOf(i)).toBe(`kiosk build ${version}`);
  return b;
}

describe('a rollout to real agents', () => {
  it('binds the agents, which report their baseline (nothing installed) without being asked', async () => {
    const bound = await bindDevices(
      t.owner,
      t.orgId,
      app.id,
      agents.map((a) => a.dir.agentId),
    );
    bound.forEach((b, i) => (agents[i]!.binding = b));
    for (const i of [A, B]) {
      const b = await bindingWhen(t, app.id, binding(i).id, (x) => x.lastReportAt !== null, `baseline of ${i}`);
      expect(b).toMatchObject({ current: null, desired: null, state: 'idle', activeJobId: null, forced: false });
    }
  });

  it('publishes an optional release: one device converges, the one whose policy postpones optional releases does not', async () => {
    const r = await publish('1.0.0');
    await converged(A, '1.0.0');
    const b = await bindingWhen(t, app.id, binding(B).id, (x) => x.state === 'postponed', 'b postponed');
    expect(b).toMatchObject({ current: null, desired: { releaseId: r.id }, forced: false, activeJobId: null });
    expect(installed(B)).toBeNull();
    expect((await updateJobsOf(t, binding(B).agentId)).at(-1)).toMatchObject({
      status: 'cancelled',
      errorMessage: expect.stringMatching(/^postponed by local policy/),
    });
  });

  it('a mandatory release is a minimum: the device below it is forced and installs it despite its policy', async () => {
    const r = await publish('1.1.0', { updatePolicy: 'mandatory' });
    await converged(A, '1.1.0');
    await converged(B, '1.1.0');
    const forcedJob = (await updateJobsOf(t, binding(B).agentId)).at(-1)!;
    expect(forcedJob).toMatchObject({ status: 'success', params: { release_id: r.id, forced: true } });
  });

  it('an optional release above the minimum converges where allowed and is postponed elsewhere', async () => {
    await publish('1.2.0');
    await converged(A, '1.2.0');
    const b = await bindingWhen(t, app.id, binding(B).id, (x) => x.state === 'postponed', 'b postponed 1.2.0');
    expect(b.current).toMatchObject({ version: '1.1.0' });
    expect(installed(B)).toBe('1.1.0');
  });

  it('yanking the newest release downgrades the devices running it to the previous published one (forced)', async () => {
    await yankRelease(t.owner, t.orgId, app.id, releases.get('1.2.0')!.id);
    await converged(A, '1.1.0');
    expect((await updateJobsOf(t, binding(A).agentId)).at(-1)).toMatchObject({
      status: 'success',
      params: { version: '1.1.0', forced: true },
    });
    const b = await bindingWhen(t, app.id, binding(B).id, (x) => x.desired?.version === '1.1.0', 'b desired 1.1.0');
    expect(b).toMatchObject({ current: { version: '1.1.0' }, activeJobId: null });
    expect(installed(B)).toBe('1.1.0');
  });

  it('moving a device to another channel converges it to that channel’s release', async () => {
    await publish('2.0.0-beta.1', { channel: 'beta' });
    expect(installed(A)).toBe('1.1.0'); // stable devices do not follow beta
    const res = await t.owner.patch(`/orgs/${t.orgId}/apps/${app.id}/devices/${binding(A).id}`, {
      body: { channel: 'beta' },
    });
    expect(res.status, res.text).toBe(200);
    await converged(A, '2.0.0-beta.1');
    expect(installed(B)).toBe('1.1.0');
  });

  it('keeps what each agent installed in its deploy state file', () => {
    const state = JSON.parse(fs.readFileSync(path.join(agents[A]!.dir.stateDir, 'deploy', 'state.json'), 'utf8'));
    expect(state.apps[app.id].current).toEqual({
      releaseId: releases.get('2.0.0-beta.1')!.id,
      version: '2.0.0-beta.1',
      sequence: releases.get('2.0.0-beta.1')!.sequence,
      channel: releases.get('2.0.0-beta.1')!.channel, // to tell a channel change from a downgrade
    });
    expect(state.apps[app.id].lastIssuedAt).toBeGreaterThan(1_700_000_000);
  });
});

describe('a device group of real agents (docs/ota.md, "Device groups")', () => {
  let signage: AppBody;
  const C = 2;
  const signageRelease = async (version: string) => {
    const artifactFileId = await uploadArtifact(uploader, `signage build ${version}`, `signage-${version}.tar.gz`);
    return release(t.owner, t.orgId, signage.id, { version, artifactFileId });
  };
  const label = async (i: number, labels: Record<string, string>) => {
    const res = await t.owner.patch(`/orgs/${t.orgId}/agents/${agents[i]!.dir.agentId}`, { body: { labels } });
    expect(res.status, res.text).toBe(200);
  };
  const bindingOf = async (i: number) =>
    (await listBindings(t.owner, t.orgId, signage.id)).find((b) => b.agentId === agents[i]!.dir.agentId);
  /** Waits until the device runs `version` of the signage app, as the coordinator sees it and as installed. */
  const runs = async (i: number, version: string) => {
    const b = (await bindingOf(i))!;
    await bindingWhen(
      t,
      signage.id,
      b.id,
      (x) => x.current?.version === version && x.activeJobId === null,
      `${i} on ${version}`,
    );
    expect(installed(i)).toBe(version);
    expect(artifactOf(i)).toBe(`signage build ${version}`);
  };

  it('binds the agent the selector matches, not the other, and it installs the release', async () => {
    signage = await createApp(t.owner, t.orgId, { slug: 'signage', updateWorkflowName: 'apply-update' });
    await signageRelease('5.0.0');
    await label(A, { role: 'kiosk' });
    await label(B, { role: 'gateway' });
    const set = await setDeviceSelector(t.owner, t.orgId, signage.id, 'role=kiosk');
    expect(set).toMatchObject({ deviceSelector: 'role=kiosk', deviceGroup: { matching: 1, bound: 1, unbound: 0 } });
    expect((await listBindings(t.owner, t.orgId, signage.id)).map((b) => [b.agentId, b.origin, b.channel])).toEqual([
      [agents[A]!.dir.agentId, 'selector', 'stable'],
    ]);
    await runs(A, '5.0.0');
    expect(await bindingOf(B)).toBeUndefined();
  });

  it('binds a new agent that enrolls and reports a matching label, and it installs the release', async () => {
    const dir = await enrollAgentStateDir(t);
    const marks = path.join(work, 'c');
    writeUpdateWorkflow(dir.stateDir, marks);
    const daemon = startDaemonProcess(dir.stateDir, ['--deploy-poll-interval', '1s', '--label', 'role=kiosk']);
    agents[C] = { dir, daemon, marks };
    await daemon.waitForLog((r) => /^connected to the coordinator/.test(r.msg), 30_000);
    const b = await eventually(
      () => bindingOf(C),
      20_000,
      () => 'the new kiosk bound by the selector',
    );
    expect(b).toMatchObject({ origin: 'selector', channel: 'stable' });
    await runs(C, '5.0.0');
  });

  it('unbinds an agent relabelled out of the group, cancelling its update job the agent has not taken', async () => {
    await stopDaemonProcess(agents[C]!.daemon); // offline: its next update job stays pending
    await signageRelease('5.1.0');
    const pending = await eventually(
      async () => (await bindingOf(C))?.activeJobId ?? undefined,
      20_000,
      () => 'an update job for the offline kiosk',
    );
    await label(C, { role: 'retired' });
    expect(await bindingOf(C)).toBeUndefined();
    expect((await updateJobsOf(t, agents[C]!.dir.agentId)).find((j) => j.id === pending)).toMatchObject({
      status: 'cancelled',
      errorMessage: 'cancelled: the device binding was removed',
    });
    await runs(A, '5.1.0');
  });

  it('removes only the bindings the selector made when the selector is set to null', async () => {
    const [manual] = await bindDevices(t.owner, t.orgId, signage.id, [agents[B]!.dir.agentId]);
    const cleared = await setDeviceSelector(t.owner, t.orgId, signage.id, null);
    expect(cleared).toMatchObject({ deviceSelector: null, deviceGroup: { matching: 0, bound: 0, unbound: 1 } });
    expect((await listBindings(t.owner, t.orgId, signage.id)).map((b) => [b.id, b.origin])).toEqual([
      [manual!.id, 'manual'],
    ]);
    expect(installed(A)).toBe('5.1.0'); // an unbound device keeps what it installed
  });
});

describe('a maintenance window with a real agent', () => {
  const ZONE = 'Asia/Kolkata';
  let win: AppBody;
  let device: BindingBody;
  const MINUTE = 60_000;
  /** A cron expression that fires at `at` (a whole minute) in ZONE, once a year. */
  const cronAt = (at: number) => {
    const parts = Object.fromEntries(
      new Intl.DateTimeFormat('en-US', {
        timeZone: ZONE,
        hourCycle: 'h23',
        month: 'numeric',
        day: 'numeric',
        hour: 'numeric',
        minute: 'numeric',
      })
        .formatToParts(at)
        .map((p) => [p.type, Number(p.value)]),
    );
    return `${parts.minute} ${parts.hour} ${parts.day} ${parts.month} *`;
  };
  const setWindow = async (opensAt: number, durationMinutes: number) => {
    const res = await t.owner.patch(`/orgs/${t.orgId}/apps/${win.id}`, {
      body: { maintenanceWindow: { cron: cronAt(opensAt), timezone: ZONE, durationMinutes } },
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body.nextWindows[0].opensAt).toBe(new Date(opensAt).toISOString());
  };
  const publishTo = async (version: string, updatePolicy: 'optional' | 'mandatory') => {
    const artifactFileId = await uploadArtifact(uploader, `kiosk build ${version}`, `kiosk-${version}.tar.gz`);
    return release(t.owner, t.orgId, win.id, { version, artifactFileId, updatePolicy });
  };
  const deviceWhen = (check: (b: BindingBody) => boolean, what: string) =>
    bindingWhen(t, win.id, device.id, check, what);
  const jobsFor = async (releaseId: string) =>
    (await updateJobsOf(t, device.agentId)).filter((j) => j.params.release_id === releaseId);

  it('holds an optional release outside the window: no update job, the binding says when the window opens', async () => {
    win = await createApp(t.owner, t.orgId, { slug: 'kiosk-window' });
    const opensAt = Math.ceil((clock.now() + 60 * MINUTE) / MINUTE) * MINUTE;
    await setWindow(opensAt, 30);
    device = (await bindDevices(t.owner, t.orgId, win.id, [agents[A]!.dir.agentId]))[0]!;
    const r = await publishTo('5.0.0', 'optional');
    const b = await deviceWhen(
      (x) => x.lastReportAt !== null && x.desired?.releaseId === r.id,
      'reported, 5.0.0 desired',
    );
    expect(b).toMatchObject({
      waitingForWindow: true,
      nextWindowAt: new Date(opensAt).toISOString(),
      activeJobId: null,
      forced: false,
    });
    expect(await jobsFor(r.id)).toEqual([]);
  });

  it('starts a mandatory release at once, outside the window', async () => {
    const r = await publishTo('5.1.0', 'mandatory');
    const b = await deviceWhen((x) => x.current?.releaseId === r.id && x.activeJobId === null, 'device on 5.1.0');
    expect(b).toMatchObject({ waitingForWindow: false, nextWindowAt: null, state: 'installed' });
    expect(installed(A)).toBe('5.1.0');
  });

  it('issues the held update once the window opens', async () => {
    const r = await publishTo('5.2.0', 'optional');
    await deviceWhen((x) => x.waitingForWindow && x.desired?.releaseId === r.id, 'waiting with 5.2.0 desired');
    // Move the coordinator's clock to 5 s before a minute, and open the window at that minute.
    const now = clock.now();
    const opensAt = Math.ceil((now + 10_000) / MINUTE) * MINUTE;
    clock.offsetMs += opensAt - 5_000 - now;
    await setWindow(opensAt, 5);
    const waiting = await getBinding(t.owner, t.orgId, win.id, device.id);
    expect(waiting).toMatchObject({ waitingForWindow: true, nextWindowAt: new Date(opensAt).toISOString() });
    expect(await jobsFor(r.id)).toEqual([]);

    const b = await deviceWhen((x) => x.current?.releaseId === r.id && x.activeJobId === null, 'device on 5.2.0');
    expect(b).toMatchObject({ waitingForWindow: false, nextWindowAt: null, state: 'installed' });
    expect(installed(A)).toBe('5.2.0');
    const [job] = await jobsFor(r.id);
    const [row] = await t.sql.all<{ created_at: string }>('SELECT created_at FROM jobs WHERE id = ?', job!.id);
    expect(Date.parse(row!.created_at)).toBeGreaterThanOrEqual(opensAt);
  });
});

import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  enrollAgentStateDir,
  startDaemonProcess,
  stopDaemonProcess,
  writeWorkflowFile,
  type AgentStateDir,
  type DaemonProcess,
} from '../helpers/agent-daemon.js';
import { makeTempDir, startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import type { ApiClient } from '../helpers/http.js';
import {
  artifactUploader,
  bindDevices,
  createApp,
  createRelease,
  uploadArtifact,
  yankRelease,
  type AppBody,
  type BindingBody,
} from '../helpers/ota.js';
import { installedVersion, updateJobsOf } from '../helpers/ota-agent.js';
import { eventually } from '../helpers/poll.js';
import { enrollTestAgent, type TestAgent } from '../helpers/agent.js';

/**
 * Staged rollouts end to end (docs/ota.md, "Staged rollouts") with four real `drover-agent run`
 * processes whose update workflow records what it installed and fails for a version starting with
 * `bad`: a good release goes through every wave, a bad one stops in its first wave and no device
 * outside it ever gets an update job, and an operator's moves.
 */

let t: TestCoordinator;
let uploader: ApiClient;
let work: string;
let app: AppBody;
const agents: { dir: AgentStateDir; daemon: DaemonProcess; marks: string; binding: BindingBody }[] = [];

afterAll(async () => {
  for (const a of agents) await stopDaemonProcess(a.daemon);
  await t?.close();
  for (const a of agents) fs.rmSync(path.dirname(a.dir.stateDir), { recursive: true, force: true });
  if (work) fs.rmSync(work, { recursive: true, force: true });
});

beforeAll(async () => {
  t = await startTestCoordinator({ env: { DROVER_STREAM_PING_MS: '500' } });
  work = makeTempDir('drover-staged-rollout-');
  uploader = await artifactUploader(t);
  app = await createApp(t.owner, t.orgId, { slug: 'gateway', updateWorkflowName: 'apply-update' });
  for (let i = 0; i < 4; i++) {
    const dir = await enrollAgentStateDir(t);
    const marks = path.join(work, `agent-${i}`);
    fs.mkdirSync(marks, { recursive: true });
    writeWorkflowFile(
      dir.stateDir,
      'apply-update',
      [
        'name: apply-update',
        'steps:',
        `  - run: case "$DROVER_PARAM_VERSION" in bad*) echo "this build does not start" >&2; exit 1;; esac; printf %s "$DROVER_PARAM_VERSION" > "${marks}/version"`,
        '    shell: true',
        '',
      ].join('\n'),
    );
    const daemon = startDaemonProcess(dir.stateDir, ['--deploy-poll-interval', '1s']);
    agents.push({ dir, daemon, marks, binding: undefined as unknown as BindingBody });
  }
  for (const a of agents) await a.daemon.waitForLog((r) => /^connected to the coordinator/.test(r.msg), 30_000);
  const bindings = await bindDevices(
    t.owner,
    t.orgId,
    app.id,
    agents.map((a) => a.dir.agentId),
  );
  for (const a of agents) a.binding = bindings.find((b) => b.agentId === a.dir.agentId)!;
}, 90_000);

const base = () => `/orgs/${t.orgId}/apps/${app.id}/releases`;

async function draft(version: string) {
  const artifactFileId = await uploadArtifact(uploader, `gateway build ${version}`, `gateway-${version}.tar.gz`);
  return createRelease(t.owner, t.orgId, app.id, { version, artifactFileId });
}

async function publishWith(releaseId: string, rollout: Record<string, unknown>) {
  const res = await t.owner.post(`${base()}/${releaseId}/publish`, { body: { rollout } });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
}

async function rollout(releaseId: string) {
  const res = await t.owner.get(`${base()}/${releaseId}/rollout`);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
}

async function rolloutWhen(releaseId: string, check: (r: any) => boolean, what: string): Promise<any> {
  let last: unknown;
  return eventually(
    async () => {
      last = await rollout(releaseId);
      return check(last) && last;
    },
    30_000,
    () => `${what}; rollout: ${JSON.stringify(last)}`,
  );
}

const versions = () => agents.map((a) => installedVersion(a.marks));

describe('staged rollouts', { timeout: 90_000 }, () => {
  it('refuses a bad plan with a 422 naming the field, and a move that does not fit the state with a 409', async () => {
    const r = await draft('0.9.0');
    const bad = await t.owner.post(`${base()}/${r.id}/publish`, {
      body: { rollout: { waves: [50, 10], soakSeconds: 0, maxFailureRate: 2 } },
    });
    expect(bad.status).toBe(422);
    expect(bad.body.details.map((d: { path: string }) => d.path)).toEqual([
      'body.rollout.waves.1',
      'body.rollout.waves',
      'body.rollout.maxFailureRate',
    ]);
    expect((await t.owner.get(`${base()}/${r.id}/rollout`)).status).toBe(404);
    expect((await t.owner.post(`${base()}/${r.id}/rollout/pause`)).status).toBe(404);
  });

  it('moves only from the wave the caller saw, when it says which: a repeated advance is a 409 and moves nothing', async () => {
    // An application without devices: each wave but the last ends at once and soaks an hour, so only moves change
    // the rollout (until its last wave, which completes it at once).
    const idle = await createApp(t.owner, t.orgId, { slug: 'idle', updateWorkflowName: 'apply-update' });
    const artifactFileId = await uploadArtifact(uploader, 'idle build', 'idle.tar.gz');
    const r = await createRelease(t.owner, t.orgId, idle.id, { version: '1.0.0', artifactFileId });
    const at = `/orgs/${t.orgId}/apps/${idle.id}/releases/${r.id}`;
    const published = await t.owner.post(`${at}/publish`, {
      body: { rollout: { waves: [10, 25, 50, 100], soakSeconds: 3600, maxFailureRate: 0 } },
    });
    expect(published.status, JSON.stringify(published.body)).toBe(200);
    const advance = (body?: unknown) => t.owner.post(`${at}/rollout/advance`, body === undefined ? {} : { body });

    // Without a body, as before: it advances from wherever the rollout is.
    expect((await advance()).body).toMatchObject({ status: 'running', currentWave: 1 });
    const first = await advance({ wave: 1 });
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(first.body).toMatchObject({ status: 'running', currentWave: 2 });
    // The same advance again (a double click, a retry after a timeout): refused, the rollout where it was.
    const again = await advance({ wave: 1 });
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({
      code: 'conflict',
      message: 'The rollout is at wave 3 of 4 now, not wave 2: read it again before you advance it',
      details: { currentWave: 2 },
    });
    const pause = await t.owner.post(`${at}/rollout/pause`, { body: { wave: 0 } });
    expect(pause.status).toBe(409);
    expect(pause.body.message).toBe('The rollout is at wave 3 of 4 now, not wave 1: read it again before you pause it');
    for (const [body, path] of [
      [{ wave: -1 }, 'body.wave'],
      [{ wave: 1.5 }, 'body.wave'],
      [{ wave: '2' }, 'body.wave'],
      [{ wave: null }, 'body.wave'],
      [{ wave: 2, extra: true }, 'body.extra'],
      [[2], 'body'],
    ] as const) {
      const bad = await advance(body);
      expect(bad.status, JSON.stringify(body)).toBe(422);
      expect(bad.body.code).toBe('validation_failed');
      expect(bad.body.details.map((d: { path: string }) => d.path)).toEqual([path]);
    }
    const now = (await t.owner.get(`${at}/rollout`)).body;
    expect(now).toMatchObject({ status: 'running', currentWave: 2 });
    // Each says which wave it started, as the coordinator's own advance does ('wave 2 of 3').
    expect(
      now.history.filter((h: { event: string }) => h.event === 'advance').map((h: { detail: unknown }) => h.detail),
    ).toEqual(['wave 2 of 4', 'wave 3 of 4']);

    // The wave it is at: the move is made; once more, a 409 on its state.
    const abort = (body: unknown) => t.owner.post(`${at}/rollout/abort`, { body });
    expect((await abort({ wave: 2 })).body).toMatchObject({ status: 'aborted', currentWave: 2 });
    expect((await abort({ wave: 2 })).body.message).toBe(
      'Cannot abort a rollout that is aborted; abort applies to a rollout that is running or paused',
    );
  });

  it("says in an operator's advance which wave it started, and after the last that the rollout completed", async () => {
    // Two devices that never connect: their update jobs stay queued, so no wave ends and only moves change the rollout.
    const held = await createApp(t.owner, t.orgId, { slug: 'held', updateWorkflowName: 'apply-update' });
    const devices = [await enrollTestAgent(t.owner, t.orgId), await enrollTestAgent(t.owner, t.orgId)];
    await bindDevices(
      t.owner,
      t.orgId,
      held.id,
      devices.map((d) => d.agentId),
    );
    const artifactFileId = await uploadArtifact(uploader, 'held build', 'held.tar.gz');
    const r = await createRelease(t.owner, t.orgId, held.id, { version: '1.0.0', artifactFileId });
    const at = `/orgs/${t.orgId}/apps/${held.id}/releases/${r.id}`;
    const published = await t.owner.post(`${at}/publish`, {
      body: { rollout: { waves: [50, 100], soakSeconds: 3600, maxFailureRate: 0 } },
    });
    expect(published.status, JSON.stringify(published.body)).toBe(200);
    expect((await t.owner.post(`${at}/rollout/advance`, { body: { wave: 0 } })).body).toMatchObject({
      status: 'running',
      currentWave: 1,
    });
    expect((await t.owner.post(`${at}/rollout/advance`, { body: { wave: 1 } })).body).toMatchObject({
      status: 'completed',
      currentWave: 1,
    });
    const done = (await t.owner.get(`${at}/rollout`)).body;
    const owner = done.history[0].by;
    expect(owner).not.toBe('system');
    expect(done.history.map((h: any) => [h.event, h.by, h.detail])).toEqual([
      ['start', owner, '2 devices in waves of 50, 100 %'],
      ['advance', owner, 'wave 2 of 2'],
      ['complete', owner, 'after wave 2 of 2, the last'],
    ]);
  });

  it('takes a good release through every wave, then completes', async () => {
    const r = await draft('1.0.0');
    await publishWith(r.id, { waves: [25, 50, 100], soakSeconds: 0, maxFailureRate: 0 });
    const done = await rolloutWhen(r.id, (x) => x.status === 'completed', 'the rollout completes');
    expect(done.waves.map((w: any) => [w.devices, w.succeeded, w.failed, w.pending])).toEqual([
      [1, 1, 0, 0],
      [2, 1, 0, 0],
      [4, 2, 0, 0],
    ]);
    expect(done.history.map((h: any) => h.event)).toEqual([
      'start',
      'wave_end',
      'advance',
      'wave_end',
      'advance',
      'complete',
    ]);
    await eventually(
      () => versions().every((v) => v === '1.0.0'),
      20_000,
      () => `installed: ${versions()}`,
    );
    const audit = await t.owner.get(`/orgs/${t.orgId}/audit?limit=50`);
    const actions = (audit.body.items ?? audit.body).map((e: any) => e.action);
    for (const action of ['release.rollout.start', 'release.rollout.advance', 'release.rollout.complete']) {
      expect(actions).toContain(action);
    }
  });

  it('stops a bad release in its first wave: no device outside it gets an update job; abort keeps the others where they are', async () => {
    const before = await Promise.all(agents.map(async (a) => (await updateJobsOf(t, a.dir.agentId)).length));
    const r = await draft('bad-2.0.0');
    await publishWith(r.id, { waves: [25, 100], soakSeconds: 0, maxFailureRate: 0 });
    const paused = await rolloutWhen(r.id, (x) => x.status === 'paused', 'the rollout pauses by itself');
    expect(paused.pausedReason).toBe('failure_threshold');
    expect(paused.waves[0]).toMatchObject({ devices: 1, failed: 1 });
    expect(paused.history.at(-1)).toMatchObject({ event: 'pause', by: 'system' });
    const after = await Promise.all(agents.map(async (a) => (await updateJobsOf(t, a.dir.agentId)).length));
    // One device (wave 1) got update jobs for it (with its retries); the three others none.
    expect(after.filter((n, i) => n > before[i]!)).toHaveLength(1);
    expect((await t.owner.post(`${base()}/${r.id}/rollout/pause`)).status).toBe(409);
    const aborted = await t.owner.post(`${base()}/${r.id}/rollout/abort`);
    expect(aborted.status).toBe(200);
    expect(aborted.body.status).toBe('aborted');
    expect((await t.owner.post(`${base()}/${r.id}/rollout/resume`)).status).toBe(409);
    const resumeAfter = await Promise.all(agents.map(async (a) => (await updateJobsOf(t, a.dir.agentId)).length));
    expect(resumeAfter.filter((n, i) => n > before[i]!)).toHaveLength(1);
    expect(versions().filter((v) => v === '1.0.0')).toHaveLength(4);
  });

  it('lets an operator pause, resume and advance through a long soak; a yank ends a rollout aborted', async () => {
    const r = await draft('1.1.0');
    await publishWith(r.id, { waves: [25, 100], soakSeconds: 3600, maxFailureRate: 0.5 });
    const soaking = await rolloutWhen(r.id, (x) => x.soakEndsAt !== null, 'wave 1 soaks');
    expect(soaking.currentWave).toBe(0);
    const paused = await t.owner.post(`${base()}/${r.id}/rollout/pause`);
    expect(paused.body).toMatchObject({ status: 'paused', pausedReason: 'operator' });
    const resumed = await t.owner.post(`${base()}/${r.id}/rollout/resume`);
    expect(resumed.body).toMatchObject({ status: 'running', pausedReason: null });
    const advanced = await t.owner.post(`${base()}/${r.id}/rollout/advance`);
    expect(advanced.body).toMatchObject({ status: 'running', currentWave: 1 });
    await eventually(
      () => versions().every((v) => v === '1.1.0'),
      30_000,
      () => `installed: ${versions()}`,
    );
    const done = await rolloutWhen(r.id, (x) => x.status === 'completed', 'the rollout completes');
    expect(done.history.map((h: any) => [h.event, h.by === 'system' ? 'system' : 'user'])).toEqual([
      ['start', 'user'],
      ['wave_end', 'system'],
      ['pause', 'user'],
      ['resume', 'user'],
      ['advance', 'user'],
      ['complete', 'system'],
    ]);

    const y = await draft('1.2.0');
    await publishWith(y.id, { waves: [25, 100], soakSeconds: 3600, maxFailureRate: 0 });
    await yankRelease(t.owner, t.orgId, app.id, y.id);
    const ended = await rollout(y.id);
    expect(ended.status).toBe('aborted');
    expect(ended.history.at(-1)).toMatchObject({ event: 'abort', detail: 'the release was yanked' });
  });
});

describe('a staged rollout across a coordinator restart', { timeout: 90_000 }, () => {
  const dataDir = makeTempDir('drover-rollout-restart-');
  let first: TestCoordinator | undefined;
  let second: TestCoordinator | undefined;
  afterAll(async () => {
    await first?.close();
    await second?.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('goes on where it was: the soak started before the restart ends after it and the next wave starts', async () => {
    first = await startTestCoordinator({ dataDir });
    const c = first;
    const gateway = await createApp(c.owner, c.orgId, { slug: 'restart', updateWorkflowName: 'apply-update' });
    const devices: TestAgent[] = [await enrollTestAgent(c.owner, c.orgId), await enrollTestAgent(c.owner, c.orgId)];
    await bindDevices(
      c.owner,
      c.orgId,
      gateway.id,
      devices.map((d) => d.agentId),
    );
    const artifactFileId = await uploadArtifact(await artifactUploader(c), 'restart build', 'restart.tar.gz');
    const r = await createRelease(c.owner, c.orgId, gateway.id, { version: '3.0.0', artifactFileId });
    const path = `/orgs/${c.orgId}/apps/${gateway.id}/releases/${r.id}`;
    const published = await c.owner.post(`${path}/publish`, {
      body: { rollout: { waves: [50, 100], soakSeconds: 2, maxFailureRate: 0 } },
    });
    expect(published.status).toBe(200);
    // Wave 1's device installs it (its update job run as an agent would).
    const bindings = (await c.owner.get<BindingBody[]>(`/orgs/${c.orgId}/apps/${gateway.id}/devices`)).body;
    const inWave = bindings.filter((b) => b.activeJobId !== null);
    expect(inWave).toHaveLength(1);
    const device = devices.find((d) => d.agentId === inWave[0]!.agentId)!;
    const jobId = inWave[0]!.activeJobId!;
    for (const step of ['accept', 'start']) {
      expect((await device.request('POST', `/v1/agent/jobs/${jobId}/${step}`)).status).toBe(200);
    }
    const finished = await device.request('POST', `/v1/agent/jobs/${jobId}/finish`, {
      status: 'success',
      exitCode: 0,
      errorMessage: null,
      output: {},
    });
    expect(finished.status).toBe(200);
    await eventually(
      async () => (await c.owner.get(`${path}/rollout`)).body.soakEndsAt !== null,
      20_000,
      'wave 1 soaks',
    );
    await first.close();

    second = await startTestCoordinator({ dataDir });
    const again = second;
    const after = await eventually(
      async () => {
        const res = await again.owner.get(`/orgs/${again.orgId}/apps/${gateway.id}/releases/${r.id}/rollout`);
        return res.body.currentWave === 1 && res.body;
      },
      20_000,
      'the next wave starts on the restarted coordinator',
    );
    expect(after.history.map((h: { event: string; detail: unknown }) => [h.event, h.detail])).toEqual([
      ['start', '2 devices in waves of 50, 100 %'],
      ['wave_end', expect.stringMatching(/^wave 1: /)],
      ['advance', 'wave 2 of 2'],
    ]);
    // The wave's devices are evaluated once the advance is recorded: its device gets its update job.
    const other = devices.find((d) => d !== device)!;
    await eventually(
      async () =>
        (await again.owner.get<BindingBody[]>(`/orgs/${again.orgId}/apps/${gateway.id}/devices`)).body.find(
          (b) => b.agentId === other.agentId,
        )?.activeJobId != null,
      10_000,
      "wave 2's device gets its update job",
    );
  });
});

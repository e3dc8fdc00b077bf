import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { generateEd25519KeyPair, privateKeyFromBase64, signManifest } from '@drover/shared';
import { reportDeployState } from '../../src/deploy/deploy-report.js';
import { DeployStateStore } from '../../src/deploy/deploy-state.js';
import { deployJobRunner, type DeployContext } from '../../src/deploy/run-deploy-job.js';
import { SELF_UPDATE_WORKFLOW, selfUpdateWorkflow } from '../../src/self-update/builtin-workflow.js';
import { HANDED_OVER, type SelfInstallRequest } from '../../src/self-update/self-update.js';
import { createMasker, type Masker } from '../../src/exec/secret-masker.js';
import type { DownloadSettings } from '../../src/files/download.js';
import { captureLogger } from '../log-capture.js';
import { startBlobServer, type BlobServer } from '../files/blob-server.js';
import { assignment, harness, sh, type Harness } from '../jobs/harness.js';
import { deployContext, FakeDeployCoordinator, unreachable, type FakeApp } from './fake-deploy.js';
import { eventually, sleep } from '../../../test/helpers/poll.js';

let blobs: BlobServer;
let fake: FakeDeployCoordinator;
let marks: string;
const open: Harness[] = [];

beforeEach(async () => {
  blobs = await startBlobServer();
  fake = new FakeDeployCoordinator(blobs);
  marks = fs.mkdtempSync(path.join(os.tmpdir(), 'drover-deploy-marks-'));
});
afterEach(async () => {
  for (const h of open.splice(0)) {
    await h.stop();
    fs.rmSync(h.stateDir, { recursive: true, force: true });
  }
  await blobs.close();
  fs.rmSync(marks, { recursive: true, force: true });
});

/** The update workflow copies the artifact and writes the version it was given. */
const update = () => ({
  name: 'update',
  steps: [
    sh(
      `cp "$DROVER_PARAM_ARTIFACT" "${marks}/installed" && printf %s "$DROVER_PARAM_VERSION" > "${marks}/version" && cp "$DROVER_PARAMS_FILE" "${marks}/params.json"`,
    ),
  ],
});
const slow = { name: 'slow', steps: [sh('sleep 0.5')] };

function make(
  options: {
    postponeOptional?: boolean;
    capacity?: number;
    workflows?: any[];
    masker?: () => Masker;
    selfUpdate?: DeployContext['selfUpdate'];
    downloads?: DownloadSettings;
    now?: () => number;
  } = {},
): Harness {
  const h = harness(options.workflows ?? [update(), slow], {
    capacity: options.capacity ?? 4,
    runUpdateJob: (stateDir) =>
      deployJobRunner({ ...deployContext(fake, stateDir, options), selfUpdate: options.selfUpdate }),
  });
  open.push(h);
  return h;
}

const installed = () =>
  fs.existsSync(path.join(marks, 'installed')) ? fs.readFileSync(path.join(marks, 'installed'), 'utf8') : null;
const localState = (h: Harness, app: FakeApp) => DeployStateStore.open(h.stateDir).get(app.applicationId);

describe('a deploy event', () => {
  it('is checked against the signed manifest, downloaded, verified and installed, reporting each state', async () => {
    const h = make();
    const app = fake.addApp({ slug: 'kiosk' });
    const release = fake.publish(app, '1.2.0');
    const event = fake.event(app);
    h.manager.onDeployEvent(event);
    await eventually(() => h.finishOf(event.jobId) !== undefined);
    expect(h.finishOf(event.jobId)).toMatchObject({ status: 'success', exitCode: 0 });
    expect(installed()).toBe('artifact 1.2.0');
    expect(fs.readFileSync(path.join(marks, 'version'), 'utf8')).toBe('1.2.0');
    const params = JSON.parse(fs.readFileSync(path.join(marks, 'params.json'), 'utf8'));
    expect(params).toMatchObject({
      release_id: release.releaseId,
      version: '1.2.0',
      sequence: 1,
      channel: 'stable',
      forced: false,
      artifact: { __type: 'FileRef', id: release.fileId, filename: 'kiosk-1.2.0.tar.gz', size: 14 },
    });
    expect(JSON.stringify(params)).not.toContain('blob/'); // no download URL given to the workflow
    expect(fake.states(app)).toEqual(['downloading', 'verifying', 'installing', 'installed']);
    expect(fake.reports.at(-1)).toEqual({
      applicationId: app.applicationId,
      currentReleaseId: release.releaseId,
      currentVersion: '1.2.0',
      currentSequence: 1,
      state: 'installed',
      error: null,
    });
    expect(localState(h, app).current).toEqual({
      releaseId: release.releaseId,
      version: '1.2.0',
      sequence: 1,
      channel: 'stable',
    });
    expect(h.kinds(event.jobId)).toEqual(['start', 'logs', 'finish']);
  });

  it("that times out in its update workflow names the job's whole timeout, not what was left for the steps", async () => {
    // Its steps get what is left after the manifest and the download: the error named that
    // (`the job timed out after 860ms (the workflow's timeout)`), a limit set nowhere.
    const h = make({ workflows: [{ name: 'update', steps: [sh('sleep 30')] }] });
    const app = fake.addApp({ slug: 'kiosk' });
    fake.publish(app, '1.2.0');
    const event = fake.event(app, { timeoutMs: 1000 });
    h.manager.onDeployEvent(event);
    await eventually(() => h.finishOf(event.jobId) !== undefined, 10_000);
    expect(h.finishOf(event.jobId)).toMatchObject({ status: 'timed_out' });
    expect(h.finishOf(event.jobId)!.errorMessage).toContain(
      "the job timed out after 1s (the workflow's timeout) during step 1",
    );
  });

  it('arriving as a job event of kind update takes the same checked path', async () => {
    const h = make();
    const app = fake.addApp();
    fake.publish(app, '2.0.0');
    const event = fake.event(app);
    h.manager.onJobEvent(event);
    await eventually(() => h.finishOf(event.jobId) !== undefined);
    expect(fake.fetches).toBe(1);
    expect(fake.states(app).at(-1)).toBe('installed');
  });

  it('is dropped with "job queue full; rejecting" and not reported when the queue is full', async () => {
    const h = make({ capacity: 1 });
    const app = fake.addApp();
    fake.publish(app, '1.0.0');
    h.manager.onJobEvent(assignment('slow', { jobId: '00000000-0000-4000-8000-0000000000aa' }));
    const event = fake.event(app);
    h.manager.onDeployEvent(event);
    expect(h.records.at(-1)).toMatchObject({ level: 40, msg: 'job queue full; rejecting', event: 'deploy' });
    // Nothing to wait for when nothing is sent: a report of the dropped event would be out within this.
    await sleep(100);
    expect(h.sent.filter((r) => r.jobId === event.jobId)).toEqual([]);
    expect(h.journal.get(event.jobId)).toBeUndefined(); // a later delivery is a new arrival
    expect(fake.fetches).toBe(0);
  });

  it('naming startWithinMs is taken at a random moment within it; a cancel meanwhile drops it', async () => {
    const h = make();
    const app = fake.addApp();
    fake.publish(app, '1.0.0');
    const random = vi.spyOn(Math, 'random').mockReturnValue(0.5);
    try {
      const event = { ...fake.event(app), startWithinMs: 400 };
      const t0 = performance.now();
      h.manager.onDeployEvent(event);
      h.manager.onDeployEvent(event); // delivered again meanwhile: still one job
      expect(h.records.at(-1)).toMatchObject({
        level: 30,
        jobId: event.jobId,
        delayMs: 200,
        msg: 'update job received; taking it in 0.2 s (the coordinator spreads a large publish over 1 s)',
      });
      expect(h.journal.get(event.jobId)).toBeUndefined();
      await eventually(() => h.finishOf(event.jobId) !== undefined);
      expect(performance.now() - t0).toBeGreaterThanOrEqual(195);
      expect(h.finishOf(event.jobId)).toMatchObject({ status: 'success' });
      expect(h.kinds(event.jobId)).toEqual(['start', 'logs', 'finish']);

      const cancelled = { ...fake.event(app), startWithinMs: 400 };
      h.manager.onDeployEvent(cancelled);
      h.manager.onCancelEvent({ jobId: cancelled.jobId });
      await sleep(300);
      // Never taken: the cancel is confirmed as for a job this agent does not hold.
      expect(h.kinds(cancelled.jobId)).toEqual(['finish']);
      expect(h.finishOf(cancelled.jobId)).toMatchObject({ status: 'cancelled' });
      expect(fake.fetches).toBe(1);

      // Sent again without a spread while it waits: taken at once, and once.
      const again = { ...fake.event(app), startWithinMs: 400 };
      h.manager.onDeployEvent(again);
      h.manager.onDeployEvent({ ...again, startWithinMs: undefined });
      await eventually(() => h.finishOf(again.jobId) !== undefined);
      await sleep(250);
      expect(h.kinds(again.jobId)).toEqual(['start', 'logs', 'finish']);

      // The shutdown drops a job still waiting: nothing is taken or reported.
      const dropped = { ...fake.event(app), startWithinMs: 400 };
      h.manager.onDeployEvent(dropped);
      await h.manager.shutdown(1000);
      await sleep(300);
      expect(h.journal.get(dropped.jobId)).toBeUndefined();
      expect(h.kinds(dropped.jobId)).toEqual([]);
    } finally {
      random.mockRestore();
    }
  });

  it('with data that is not a deploy assignment is ignored with a log line', () => {
    const h = make();
    h.manager.onDeployEvent({ releaseId: 'r1' });
    expect(h.records.at(-1)).toMatchObject({ level: 40, msg: 'ignored a deploy event: it has no job id' });
    h.manager.onDeployEvent('nonsense');
    expect(h.records.at(-1)?.msg).toBe('ignored a deploy event: its data is not an object');
    expect(h.sent).toEqual([]);
  });
});

describe('nothing is installed', () => {
  async function refused(h: Harness, app: FakeApp, event = fake.event(app)) {
    h.manager.onDeployEvent(event);
    await eventually(() => h.finishOf(event.jobId) !== undefined);
    expect(installed()).toBeNull();
    expect(fake.states(app).at(-1)).toBe('refused');
    const finish = h.finishOf(event.jobId)!;
    expect(finish).toMatchObject({ status: 'failed', exitCode: null });
    expect(finish.errorMessage).toMatch(/^refused: .*; nothing was installed$/);
    return finish.errorMessage as string;
  }

  it('when the manifest signature does not verify with the pinned key (tampered in transit)', async () => {
    const h = make();
    const app = fake.addApp();
    fake.publish(app, '1.0.0');
    fake.tamper = (entry) => ({ ...entry, payload: { ...entry.payload, forced: true } });
    expect(await refused(h, app)).toContain(
      'the manifest signature does not verify with the server key pinned at enrollment',
    );
    expect(localState(h, app).current).toBeNull();
    expect(fake.reports.at(-1)?.error).toContain('signature does not verify');
  });

  it('when the manifest is signed by another key than the pinned one', async () => {
    const h = make();
    const app = fake.addApp();
    fake.publish(app, '1.0.0');
    const other = privateKeyFromBase64(generateEd25519KeyPair().privateKey);
    fake.tamper = (entry) => signManifest(entry.payload, other);
    expect(await refused(h, app)).toContain('signature does not verify');
  });

  it('when the coordinator names the installed release again, with other bytes the release keys did not sign', async () => {
    const h = make();
    const k1 = generateEd25519KeyPair();
    fake.releaseKeys = { keys: [k1.publicKey], signer: k1 };
    const app = fake.addApp({ slug: 'kiosk' });
    const good = fake.publish(app, '1.0.0', 'signed artifact');
    const first = fake.event(app);
    h.manager.onDeployEvent(first);
    await eventually(() => h.finishOf(first.jobId) !== undefined);
    expect(h.finishOf(first.jobId)).toMatchObject({ status: 'success' });
    expect(installed()).toBe('signed artifact');

    // A coordinator broken into has no release key: it keeps the installed release's id and swaps its bytes.
    fake.releaseKeys = { keys: [k1.publicKey], signer: null };
    const evil = Buffer.from('unsigned artifact');
    blobs.blobs.set(good.releaseId, evil);
    app.release = { ...good, content: evil };
    const again = fake.event(app);
    h.manager.onDeployEvent(again);
    await eventually(() => h.finishOf(again.jobId) !== undefined);
    expect(h.finishOf(again.jobId)?.errorMessage).toBe(
      `refused: release 1.0.0 (sequence ${good.sequence}) of kiosk is unsigned, but needs a signature by one of the release keys this device pinned (1 key (${k1.publicKey.slice(0, 8)}…)): the installed release is kept, not installed again; nothing was installed`,
    );
    expect(installed()).toBe('signed artifact');
    expect(fake.states(app).at(-1)).toBe('refused');
    expect(localState(h, app).current?.releaseId).toBe(good.releaseId);
  });

  it('when the event names another release or checksum than the signed manifest', async () => {
    const h = make();
    const app = fake.addApp();
    fake.publish(app, '1.0.0');
    const wrongRelease = fake.event(app);
    wrongRelease.params.release_id = '11111111-1111-4111-8111-111111111111';
    expect(await refused(h, app, wrongRelease)).toContain(
      'the deploy event asks for release 11111111-1111-4111-8111-111111111111 (version 1.0.0) but the signed manifest names release',
    );
    const wrongSum = fake.event(app);
    wrongSum.params.checksum_sha256 = 'a'.repeat(64);
    expect(await refused(h, app, wrongSum)).toContain(`the deploy event's checksum ${'a'.repeat(64)} differs`);
    const otherWorkflow = fake.event(app, { workflowName: 'slow' });
    expect(await refused(h, app, otherWorkflow)).toContain(
      'would run the workflow slow but the signed manifest names update',
    );
  });

  it('when the downloaded bytes do not match the signed checksum', async () => {
    const h = make();
    const app = fake.addApp();
    const release = fake.publish(app, '1.0.0');
    blobs.blobs.set(release.releaseId, Buffer.from('artifact 6.6.6')); // same size, other bytes
    const message = await refused(h, app);
    expect(message).toContain('the download does not match its checksum');
    const workspace = path.join(h.stateDir, 'jobs');
    const leftovers = fs.readdirSync(workspace, { recursive: true }).map(String);
    expect(leftovers.filter((f) => f.includes('inputs/artifact/'))).toEqual([]);
  });

  /** The agent's log line and its report of a refusal: `reason` then "nothing was installed". */
  function expectRefusal(h: Harness, app: FakeApp, reason: string) {
    const error = `${reason}; nothing was installed`;
    expect(h.records.filter((r) => r.level === 50).map((r) => r.msg)).toContain(`deployment refused: ${error}`);
    expect(fake.reports.at(-1)).toMatchObject({ applicationId: app.applicationId, state: 'refused', error });
  }

  it('when the manifest was issued to another agent (a manifest of another device)', async () => {
    const h = make();
    const app = fake.addApp();
    fake.publish(app, '1.0.0');
    const other = '9e8d7c6b-5a49-4382-9170-6f5e4d3c2b1a';
    fake.signing = (payload) => ({ ...payload, agent_id: other });
    await refused(h, app);
    expectRefusal(
      h,
      app,
      `the signed manifest was issued to agent ${other}, not to this agent (${fake.agentId}): a manifest of another device`,
    );
  });

  it('when the manifest expired by the coordinator-corrected clock (this machine’s own clock would accept it)', async () => {
    const coordinatorNow = Date.now() + 2 * 3600_000; // this machine's clock is 2 h behind the coordinator's
    const h = make({ now: () => coordinatorNow });
    const app = fake.addApp();
    fake.publish(app, '1.0.0');
    let expiresAt = 0;
    fake.signing = (payload) => {
      expiresAt = payload.expires_at;
      return payload;
    };
    await refused(h, app);
    const iso = (seconds: number) => new Date(seconds * 1000).toISOString().replace('.000Z', 'Z');
    expectRefusal(
      h,
      app,
      `the signed manifest expired at ${iso(expiresAt)} (coordinator time now ${iso(Math.floor(coordinatorNow / 1000))}): a stale manifest held back or replayed`,
    );
  });

  it('when the manifest asks for a lower sequence than installed on the same channel, not yanked (a downgrade)', async () => {
    const h = make();
    const app = fake.addApp({ slug: 'kiosk' });
    const older = fake.publish(app, '1.0.0');
    fake.publish(app, '1.1.0');
    const first = fake.event(app);
    h.manager.onDeployEvent(first);
    await eventually(() => h.finishOf(first.jobId)?.status === 'success');
    expect(localState(h, app).current).toMatchObject({ version: '1.1.0', sequence: 2, channel: 'stable' });
    fs.rmSync(path.join(marks, 'installed'));
    app.release = older;
    await refused(h, app);
    expectRefusal(
      h,
      app,
      'the signed manifest asks for kiosk 1.0.0 (sequence 1), older than the installed 1.1.0 (sequence 2) on the same channel stable, and the installed release was not yanked: a downgrade refused',
    );
    expect(localState(h, app).current?.version).toBe('1.1.0');

    // The same downgrade after a channel change (the operator moved the device) is installed ...
    app.channel = 'beta';
    const moved = fake.event(app);
    h.manager.onDeployEvent(moved);
    await eventually(() => h.finishOf(moved.jobId)?.status === 'success');
    expect(localState(h, app).current).toMatchObject({ version: '1.0.0', sequence: 1, channel: 'beta' });
    // ... and so is one forced by a yank of the installed release.
    fake.publish(app, '1.2.0');
    const up = fake.event(app);
    h.manager.onDeployEvent(up);
    await eventually(() => h.finishOf(up.jobId)?.status === 'success');
    app.release = older;
    app.forced = true;
    const yanked = fake.event(app);
    h.manager.onDeployEvent(yanked);
    await eventually(() => h.finishOf(yanked.jobId)?.status === 'success');
    expect(localState(h, app).current).toMatchObject({ version: '1.0.0', sequence: 1 });
  });

  it('installs from a coordinator older than the agent (no agent_id, no expires_at), with one warning line', async () => {
    const h = make();
    const app = fake.addApp({ slug: 'kiosk' });
    fake.publish(app, '1.0.0');
    fake.signing = ({ agent_id: _agent, expires_at: _expires, ...payload }) => payload as never;
    const event = fake.event(app);
    h.manager.onDeployEvent(event);
    await eventually(() => h.finishOf(event.jobId)?.status === 'success');
    expect(installed()).toBe('artifact 1.0.0');
  });

  it('when the manifest is older than the last one accepted (replay)', async () => {
    const h = make();
    const app = fake.addApp();
    fake.publish(app, '1.0.0');
    const first = fake.event(app);
    h.manager.onDeployEvent(first);
    await eventually(() => h.finishOf(first.jobId)?.status === 'success');
    fs.rmSync(path.join(marks, 'installed'));
    fake.publish(app, '1.1.0');
    fake.clockOffset = -60;
    expect(await refused(h, app)).toContain('before the last one accepted');
    const reason = h.records.findLast((r) => r.level === 50)!.msg as string;
    expect(reason).toMatch(
      /^deployment refused: the signed manifest was issued at \S+Z, before the last one accepted \(\S+Z\): an old manifest replayed; nothing was installed$/,
    );
    expectRefusal(h, app, reason.replace(/^deployment refused: /, '').replace(/; nothing was installed$/, ''));
    expect(localState(h, app).current?.version).toBe('1.0.0');
  });
});

describe('the local policy', () => {
  it('postpones an optional release: reported postponed, the job cancelled "postponed by local policy"', async () => {
    const h = make({ postponeOptional: true });
    const app = fake.addApp();
    const release = fake.publish(app, '1.0.0');
    const event = fake.event(app);
    h.manager.onDeployEvent(event);
    await eventually(() => h.finishOf(event.jobId) !== undefined);
    expect(h.finishOf(event.jobId)).toMatchObject({ status: 'cancelled' });
    expect(h.finishOf(event.jobId)!.errorMessage).toMatch(/^postponed by local policy/);
    expect(fake.states(app)).toEqual(['postponed']);
    expect(installed()).toBeNull();
    expect(blobs.requests).toEqual([]);
    expect(localState(h, app).postponed?.releaseId).toBe(release.releaseId);
  });

  it('installs a forced release anyway', async () => {
    const h = make({ postponeOptional: true });
    const app = fake.addApp({ forced: true });
    fake.publish(app, '1.0.0');
    const event = fake.event(app);
    h.manager.onDeployEvent(event);
    await eventually(() => h.finishOf(event.jobId) !== undefined);
    expect(h.finishOf(event.jobId)?.status).toBe('success');
    expect(installed()).toBe('artifact 1.0.0');
  });

  it("goes by the signed entry's `forced` alone, never by the unsigned event's", async () => {
    const h = make({ postponeOptional: true });
    const app = fake.addApp();
    fake.publish(app, '1.0.0');
    // An event that says forced cannot get an optional release past the policy...
    const forged = fake.event(app);
    forged.params.forced = true;
    h.manager.onDeployEvent(forged);
    await eventually(() => h.finishOf(forged.jobId) !== undefined);
    expect(h.finishOf(forged.jobId)).toMatchObject({ status: 'cancelled' });
    expect(h.finishOf(forged.jobId)!.errorMessage).toMatch(/^postponed by local policy/);
    expect(installed()).toBeNull();
    expect(blobs.requests).toEqual([]);

    // ...and one that says optional does not hold back a release the entry forces, whose workflow
    // is told it is forced.
    app.forced = true;
    const stale = fake.event(app);
    stale.params.forced = false;
    h.manager.onDeployEvent(stale);
    await eventually(() => h.finishOf(stale.jobId) !== undefined);
    expect(h.finishOf(stale.jobId)?.status).toBe('success');
    expect(installed()).toBe('artifact 1.0.0');
    expect(JSON.parse(fs.readFileSync(path.join(marks, 'params.json'), 'utf8')).forced).toBe(true);
  });

  it("gives the workflow the signed entry's `forced`, not the event's", async () => {
    const h = make();
    const app = fake.addApp();
    fake.publish(app, '1.0.0');
    const event = fake.event(app);
    event.params.forced = true;
    h.manager.onDeployEvent(event);
    await eventually(() => h.finishOf(event.jobId) !== undefined);
    expect(h.finishOf(event.jobId)?.status).toBe('success');
    expect(JSON.parse(fs.readFileSync(path.join(marks, 'params.json'), 'utf8')).forced).toBe(false);
  });
});

describe('a failed update', () => {
  it('without the update workflow here is failed, reported, and remembered', async () => {
    const h = make({ workflows: [slow] });
    const app = fake.addApp();
    fake.publish(app, '1.0.0');
    const event = fake.event(app);
    h.manager.onDeployEvent(event);
    await eventually(() => h.finishOf(event.jobId) !== undefined);
    expect(h.finishOf(event.jobId)).toMatchObject({
      status: 'failed',
      errorMessage:
        'the update workflow update is not defined on this agent (no valid workflow file with that name); nothing was installed',
    });
    expect(fake.states(app)).toEqual(['failed']);
    expect(localState(h, app).lastFailure).toMatchObject({ releaseId: app.release!.releaseId, state: 'failed' });
  });

  it('when the workflow exits non-zero reports failed with its error and keeps the old installation', async () => {
    const h = make({ workflows: [{ name: 'update', steps: [sh('exit 3')] }] });
    const app = fake.addApp();
    fake.publish(app, '1.0.0');
    const event = fake.event(app);
    h.manager.onDeployEvent(event);
    await eventually(() => h.finishOf(event.jobId) !== undefined);
    expect(h.finishOf(event.jobId)).toMatchObject({
      status: 'failed',
      exitCode: 3,
      errorMessage: 'step 1 exited with code 3',
    });
    expect(fake.states(app)).toEqual(['downloading', 'verifying', 'installing', 'failed']);
    expect(fake.reports.at(-1)?.error).toBe('the update workflow did not succeed: step 1 exited with code 3');
    expect(localState(h, app).current).toBeNull();
  });

  it('masks secret values in its lines, its result and its reports, before a long error is shortened', async () => {
    const secret = 'the-deploy-s3cret';
    const h = make({ workflows: [slow], masker: () => createMasker([secret]) });
    const app = fake.addApp({ updateWorkflow: `update-${secret}` });
    fake.publish(app, '1.0.0');
    const event = fake.event(app);
    h.manager.onDeployEvent(event);
    await eventually(() => h.finishOf(event.jobId) !== undefined);
    expect(h.finishOf(event.jobId)?.errorMessage).toMatch(/^the update workflow update-\*\*\* is not defined/);
    expect(fake.reports.at(-1)?.error).toMatch(/^the update workflow update-\*\*\* is not defined/);
    expect(JSON.stringify([h.sent, fake.reports])).not.toContain(secret);

    // An error longer than a report takes is shortened after masking: no half of a secret shows.
    const error = `${'x'.repeat(1990)}${secret}${'y'.repeat(100)}`;
    const store = DeployStateStore.open(h.stateDir);
    const { logger } = captureLogger();
    await reportDeployState(
      { api: fake.api, store, masker: () => createMasker([secret]) },
      logger,
      app.applicationId,
      'failed',
      error,
    );
    const sent = fake.reports.at(-1)!.error!;
    expect(sent.startsWith(`${'x'.repeat(1990)}***yyy`)).toBe(true);
    expect(sent.length).toBeLessThanOrEqual(2000);
    for (let n = 4; n <= secret.length; n++) expect(sent).not.toContain(secret.slice(0, n));
  });

  it('when the disk has too little space for the artifact is failed naming both sizes, before any byte is fetched', async () => {
    const h = make({
      downloads: { statfs: () => Promise.resolve({ bavail: 2, bsize: 4 }) }, // 8 bytes free
    });
    const app = fake.addApp();
    const release = fake.publish(app, '1.0.0');
    const event = fake.event(app);
    h.manager.onDeployEvent(event);
    await eventually(() => h.finishOf(event.jobId) !== undefined);
    const dir = path.join(h.stateDir, 'jobs', event.jobId, 'workspace', 'inputs', 'artifact');
    const error = `the artifact could not be downloaded: not enough disk space for the download: it needs ${release.content.length} B more in ${dir}, 8 B are available`;
    expect(h.finishOf(event.jobId)).toMatchObject({ status: 'failed', errorMessage: error });
    expect(fake.states(app)).toEqual(['downloading', 'failed']);
    expect(fake.reports.at(-1)?.error).toBe(error);
    expect(blobs.requests.filter((r) => r.startsWith('GET /blob/'))).toEqual([]);
    expect(installed()).toBeNull();
  });

  it('when the artifact trickles in slower than the minimum speed is failed naming the speed', async () => {
    const h = make({ downloads: { minSpeed: 1000, speedWindowMs: 200 } });
    const app = fake.addApp();
    const release = fake.publish(app, '1.0.0');
    blobs.trickle.add(release.releaseId); // 50 B/s
    const event = fake.event(app);
    h.manager.onDeployEvent(event);
    await eventually(() => h.finishOf(event.jobId) !== undefined);
    expect(h.finishOf(event.jobId)).toMatchObject({
      status: 'failed',
      errorMessage: expect.stringMatching(
        /^the artifact could not be downloaded: the download was too slow: \d+ B\/s over the last 0\.2 s, below the minimum of 1 KB\/s \(--min-download-speed\)$/,
      ),
    });
    expect(fake.states(app)).toEqual(['downloading', 'failed']);
    expect(blobs.requests.filter((r) => r.startsWith('GET /blob/'))).toHaveLength(1);
    expect(installed()).toBeNull();
  });

  it('when the manifest cannot be fetched is failed without a download', async () => {
    const h = make();
    const app = fake.addApp();
    fake.publish(app, '1.0.0');
    fake.fetchErrors.push(unreachable());
    const event = fake.event(app);
    h.manager.onDeployEvent(event);
    await eventually(() => h.finishOf(event.jobId) !== undefined);
    expect(h.finishOf(event.jobId)?.errorMessage).toBe(
      'could not fetch the signed manifest from the coordinator (Cannot reach the coordinator: connection refused); nothing was installed',
    );
    expect(blobs.requests).toEqual([]);
  });
});

describe('an update of the built-in drover-agent-update (the agent updating its own binary)', () => {
  /** A self-update that records what it is handed, and hands the job over as the real one does after a swap. */
  function selfUpdate() {
    const calls: { req: SelfInstallRequest; bytes: string }[] = [];
    return {
      calls,
      handles: (name: string) => name === SELF_UPDATE_WORKFLOW,
      install: (req: SelfInstallRequest) => {
        calls.push({ req, bytes: fs.readFileSync(req.artifactPath, 'utf8') });
        return Promise.resolve(HANDED_OVER);
      },
    };
  }

  it('hands the verified artifact to the self-update, and leaves the job running for the next binary to finish', async () => {
    const self = selfUpdate();
    const h = make({ workflows: [selfUpdateWorkflow(120_000)], selfUpdate: self });
    const app = fake.addApp({ slug: 'drover-agent', updateWorkflow: SELF_UPDATE_WORKFLOW });
    const release = fake.publish(app, '0.2.0');
    const event = fake.event(app);
    h.manager.onDeployEvent(event);
    await eventually(() => self.calls.length === 1 && h.manager.queue.running === null);
    expect(self.calls[0]).toMatchObject({
      req: {
        jobId: event.jobId,
        applicationId: app.applicationId,
        release: { releaseId: release.releaseId, version: '0.2.0', sequence: 1 },
      },
      bytes: 'artifact 0.2.0',
    });
    expect(h.finishOf(event.jobId)).toBeUndefined();
    expect(h.journal.get(event.jobId)?.state).toBe('running');
    expect(fake.states(app)).toEqual(['downloading', 'verifying', 'installing']);
    expect(localState(h, app).current).toBeNull(); // recorded by the new binary once it connected
  });

  it('never hands over an artifact that does not match the signed checksum', async () => {
    const self = selfUpdate();
    const h = make({ workflows: [selfUpdateWorkflow(120_000)], selfUpdate: self });
    const app = fake.addApp({ slug: 'drover-agent', updateWorkflow: SELF_UPDATE_WORKFLOW });
    const release = fake.publish(app, '0.2.0');
    blobs.blobs.set(release.releaseId, Buffer.from('artifact 6.6.6'));
    const event = fake.event(app);
    h.manager.onDeployEvent(event);
    await eventually(() => h.finishOf(event.jobId) !== undefined);
    expect(h.finishOf(event.jobId)?.errorMessage).toMatch(
      /^refused: .*does not match its checksum.*; nothing was installed$/,
    );
    expect(self.calls).toEqual([]);
  });
});

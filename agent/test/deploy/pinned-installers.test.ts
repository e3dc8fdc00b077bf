import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  generateEd25519KeyPair,
  loadPatternEngine,
  privateKeyFromBase64,
  signRelease,
  sortedKeys,
  type ManifestPayload,
} from '@drover/shared';
import { DeployStateStore } from '../../src/deploy/deploy-state.js';
import { deployJobRunner, type DeployContext } from '../../src/deploy/run-deploy-job.js';
import { SELF_UPDATE_WORKFLOW, selfUpdateWorkflow } from '../../src/self-update/builtin-workflow.js';
import { HANDED_OVER, type SelfInstallRequest } from '../../src/self-update/self-update.js';
import { startBlobServer, type BlobServer } from '../files/blob-server.js';
import { harness, sh, type Harness } from '../jobs/harness.js';
import { deployContext, FakeDeployCoordinator, type FakeApp } from './fake-deploy.js';
import { eventually } from '../../../test/helpers/poll.js';

/**
 * What release keys protect against a coordinator broken into (docs/ota.md, "Release keys"): pins
 * bind the installer (the update workflow, the built-in self-update) and the slug, not only the
 * coordinator-chosen application id; under keys only the signed sequence decides a downgrade; and
 * the update workflow's declared params hold for the values an update gives it.
 */

let blobs: BlobServer;
let fake: FakeDeployCoordinator;
let marks: string;
const open: Harness[] = [];

beforeEach(async () => {
  blobs = await startBlobServer();
  fake = new FakeDeployCoordinator(blobs);
  marks = fs.mkdtempSync(path.join(os.tmpdir(), 'drover-pins-marks-'));
});
afterEach(async () => {
  for (const h of open.splice(0)) {
    await h.stop();
    fs.rmSync(h.stateDir, { recursive: true, force: true });
  }
  await blobs.close();
  fs.rmSync(marks, { recursive: true, force: true });
});

const k1 = generateEd25519KeyPair();
const k2 = generateEd25519KeyPair();
const short = (k: { publicKey: string }) => `${k.publicKey.slice(0, 8)}…`;

/** The update workflow copies the artifact where the test looks for it. */
const update = () => ({
  name: 'update',
  steps: [
    sh(`cp "$DROVER_PARAM_ARTIFACT" "${marks}/installed" && printf %s "$DROVER_PARAM_VERSION" >> "${marks}/ran"`),
  ],
});

function make(workflows: any[] = [update()], selfUpdate?: DeployContext['selfUpdate']): Harness {
  const h = harness(workflows, {
    runUpdateJob: (stateDir) => deployJobRunner({ ...deployContext(fake, stateDir), selfUpdate }),
  });
  open.push(h);
  return h;
}

const installed = () =>
  fs.existsSync(path.join(marks, 'installed')) ? fs.readFileSync(path.join(marks, 'installed'), 'utf8') : null;
const ran = () => (fs.existsSync(path.join(marks, 'ran')) ? fs.readFileSync(path.join(marks, 'ran'), 'utf8') : '');

async function deploy(h: Harness, app: FakeApp) {
  const event = fake.event(app);
  h.manager.onDeployEvent(event);
  await eventually(() => h.finishOf(event.jobId) !== undefined);
  return h.finishOf(event.jobId)!;
}

/**
 * What a coordinator broken into signs for `app` (it holds the server key, not the release keys):
 * no keys at all, or other keys and a signature by them, the slug it likes.
 */
function forge(app: FakeApp, how: { keys: { publicKey: string; privateKey: string } | null; signFor?: string }) {
  const previous = fake.signing;
  fake.signing = (payload: ManifestPayload) => {
    const p = previous ? previous(payload) : payload;
    if (p.application_id !== app.applicationId) return p;
    const { release_keys: _k, release_key_generation: _g, release_key_rotations: _r, ...rest } = p;
    if (!how.keys || !rest.desired) return { ...rest, desired: rest.desired && { ...rest.desired, signature: null } };
    const d = rest.desired;
    const signature = signRelease(
      { app: how.signFor ?? p.slug, version: d.version, sequence: d.sequence, sha256: d.checksum_sha256, size: d.size },
      privateKeyFromBase64(how.keys.privateKey),
    );
    return {
      ...rest,
      desired: { ...d, signature },
      release_keys: sortedKeys([how.keys.publicKey]),
      release_key_generation: 0,
    };
  };
}

describe('release keys pinned for an update workflow', () => {
  it('bind it: a new application id naming it is refused unsigned, under other keys or another slug; a signed one installs', async () => {
    const h = make();
    fake.releaseKeys = { keys: [k1.publicKey], signer: k1 };
    const kiosk = fake.addApp({ slug: 'kiosk' });
    fake.publish(kiosk, '1.0.0', 'signed 1.0.0');
    expect(await deploy(h, kiosk)).toMatchObject({ status: 'success' });
    expect(DeployStateStore.open(h.stateDir).get(kiosk.applicationId).releaseKeys).toEqual({
      keys: [k1.publicKey],
      generation: 0,
      slug: 'kiosk',
      workflows: ['update'],
    });

    // The coordinator, broken into, makes up a new application that installs through `update`.
    const evil = fake.addApp({ slug: 'kiosk', updateWorkflow: 'update' });
    fake.publish(evil, '6.6.6', 'evil 6.6.6');
    const bound = `the update workflow update is bound to the release keys this device pinned for application ${kiosk.applicationId} (kiosk), whatever the application id`;

    forge(evil, { keys: null });
    let finish = await deploy(h, evil);
    expect(finish.errorMessage).toBe(
      `refused: the signed manifest names no release keys for kiosk, but this device pinned 1 key (${short(k1)}): releases it cannot verify are refused (${bound}); nothing was installed`,
    );
    expect(fake.states(evil).at(-1)).toBe('refused');

    fake.signing = null;
    forge(evil, { keys: k2 });
    finish = await deploy(h, evil);
    expect(finish.errorMessage).toContain(
      `the release keys of kiosk changed to 1 key (${short(k2)}) without a rotation signed by a key this device pinned`,
    );
    expect(finish.errorMessage).toContain(bound);

    fake.signing = null;
    evil.slug = 'debug-tools';
    forge(evil, { keys: k1 });
    finish = await deploy(h, evil);
    expect(finish.errorMessage).toContain(
      `the signed manifest names application ${evil.applicationId} debug-tools, but the update workflow update is bound to the release keys`,
    );
    expect(installed()).toBe('signed 1.0.0');
    expect(ran()).toBe('1.0.0');

    // An application created again (the same slug and keys, sequences going on): signed, it installs.
    fake.signing = null;
    evil.slug = 'kiosk';
    fake.publish(evil, '1.1.0', 'signed 1.1.0'); // sequence 2, above the installed 1
    expect(await deploy(h, evil)).toMatchObject({ status: 'success' });
    expect(installed()).toBe('signed 1.1.0');
  });

  it('refuse, under a new application id, an older signed release than the one installed through the workflow', async () => {
    const h = make();
    fake.releaseKeys = { keys: [k1.publicKey], signer: k1 };
    const kiosk = fake.addApp({ slug: 'kiosk' });
    fake.publish(kiosk, '1.0.0', 'signed 1.0.0');
    fake.publish(kiosk, '2.0.0', 'signed 2.0.0');
    expect(await deploy(h, kiosk)).toMatchObject({ status: 'success' });
    const again = fake.addApp({ slug: 'kiosk' });
    fake.publish(again, '1.0.0', 'signed 1.0.0'); // a genuine release of kiosk, sequence 1
    const finish = await deploy(h, again);
    expect(finish.errorMessage).toBe(
      `refused: the signed manifest asks for kiosk 1.0.0 (sequence 1) under application ${again.applicationId}, older than the 2.0.0 (sequence 2) installed under application ${kiosk.applicationId} (kiosk) (the update workflow update is bound to the release keys this device pinned for application ${kiosk.applicationId} (kiosk), whatever the application id): a downgrade refused; nothing was installed`,
    );
    expect(installed()).toBe('signed 2.0.0');
  });

  it('bind the built-in self-update: a new application id naming drover-agent-update without the keys never gets the binary swapped', async () => {
    const calls: SelfInstallRequest[] = [];
    const self = {
      handles: (name: string) => name === SELF_UPDATE_WORKFLOW,
      install: (req: SelfInstallRequest) => {
        calls.push(req);
        return Promise.resolve(HANDED_OVER);
      },
    };
    const h = make([selfUpdateWorkflow(120_000)], self);
    fake.releaseKeys = { keys: [k1.publicKey], signer: k1 };
    const agent = fake.addApp({ slug: 'drover-agent', updateWorkflow: SELF_UPDATE_WORKFLOW });
    fake.publish(agent, '0.2.0');
    const first = fake.event(agent);
    h.manager.onDeployEvent(first);
    await eventually(() => calls.length === 1 && h.manager.queue.running === null);

    const evil = fake.addApp({ slug: 'tools', updateWorkflow: SELF_UPDATE_WORKFLOW });
    fake.publish(evil, '6.6.6', '#!/bin/sh\nid > /tmp/owned\n');
    forge(evil, { keys: null });
    const finish = await deploy(h, evil);
    expect(finish.errorMessage).toMatch(
      /^refused: the signed manifest names application .* tools, but the update workflow drover-agent-update is bound to the release keys this device pinned for application .* \(drover-agent\)/,
    );
    expect(calls).toHaveLength(1);
  });
});

describe('a downgrade under release keys', () => {
  it('is refused whatever the channel or `forced` say; going back is the older artifact signed again, higher', async () => {
    const h = make();
    fake.releaseKeys = { keys: [k1.publicKey], signer: k1 };
    const kiosk = fake.addApp({ slug: 'kiosk' });
    const older = fake.publish(kiosk, '1.0.0', 'signed 1.0.0');
    expect(await deploy(h, kiosk)).toMatchObject({ status: 'success' });
    fake.publish(kiosk, '2.0.0', 'signed 2.0.0');
    expect(await deploy(h, kiosk)).toMatchObject({ status: 'success' });

    const refusal =
      'refused: the signed manifest asks for kiosk 1.0.0 (sequence 1), older than the installed 2.0.0 (sequence 2), and the releases of kiosk are signed with release keys: a downgrade refused whatever the channel or a yank (neither is signed); to go back, sign the older artifact again as a release with a higher sequence; nothing was installed';
    kiosk.release = older;
    kiosk.channel = 'beta'; // unsigned: any coordinator may say so
    expect((await deploy(h, kiosk)).errorMessage).toBe(refusal);
    kiosk.channel = 'stable';
    kiosk.forced = true; // "the installed release was yanked": unsigned too
    expect((await deploy(h, kiosk)).errorMessage).toBe(refusal);
    expect(installed()).toBe('signed 2.0.0');

    // The operator's way back: the 1.0.0 artifact, signed again as sequence 3.
    kiosk.forced = false;
    kiosk.release = { ...kiosk.release, sequence: 2 };
    fake.publish(kiosk, '1.0.0', 'signed 1.0.0');
    expect(await deploy(h, kiosk)).toMatchObject({ status: 'success' });
    expect(installed()).toBe('signed 1.0.0');
    expect(DeployStateStore.open(h.stateDir).get(kiosk.applicationId).current).toMatchObject({ sequence: 3 });
  });
});

describe("an update workflow's declared params", () => {
  it('hold for the values of an update: a version its pattern refuses is refused before anything is downloaded or run', async () => {
    await loadPatternEngine();
    const restartApp = {
      name: 'restart-app',
      paramsSchema: [
        { name: 'version', type: 'string' as const, pattern: '^[0-9]+\\.[0-9]+\\.[0-9]+$', required: true },
        { name: 'artifact', type: 'file' as const },
        { name: 'release_id', type: 'string' as const },
        { name: 'channel', type: 'string' as const },
        { name: 'sequence', type: 'number' as const },
        { name: 'forced', type: 'boolean' as const },
        { name: 'checksum_sha256', type: 'string' as const },
      ],
      steps: [sh(`printf %s "$DROVER_PARAM_VERSION" >> "${marks}/ran"`)],
    };
    const h = make([restartApp]);
    const app = fake.addApp({ slug: 'kiosk', updateWorkflow: 'restart-app' });
    fake.publish(app, '1.0.0; id > /tmp/x');
    const finish = await deploy(h, app);
    expect(finish.errorMessage).toBe(
      'refused: the update workflow restart-app does not take this release: the params do not fit the workflow file on this agent: params.version must match the pattern `^[0-9]+\\.[0-9]+\\.[0-9]+$`, got `1.0.0; id > /tmp/x` (string); nothing was installed',
    );
    expect(fake.states(app)).toEqual(['refused']);
    expect(blobs.requests.filter((r) => r.startsWith('GET /blob/'))).toEqual([]);
    expect(ran()).toBe('');

    fake.publish(app, '1.0.1');
    expect(await deploy(h, app)).toMatchObject({ status: 'success' });
    expect(ran()).toBe('1.0.1');
  });

  it('need not declare every update param, but refuse a required param no update gives', async () => {
    const withWho = (required: boolean) => ({
      name: 'greet',
      paramsSchema: [{ name: 'who', type: 'string' as const, required }],
      steps: [sh(`printf "$DROVER_PARAM_VERSION" >> "${marks}/ran"`)],
    });
    const h = make([withWho(true)]);
    const app = fake.addApp({ slug: 'kiosk', updateWorkflow: 'greet' });
    fake.publish(app, '1.0.0');
    const finish = await deploy(h, app);
    expect(finish.errorMessage).toMatch(
      /^refused: the update workflow greet does not take this release: the params do not fit the workflow file on this agent: params\.who is required/,
    );
    expect(ran()).toBe('');

    // The update params it does not declare are set all the same.
    const optional = make([withWho(false)]);
    expect(await deploy(optional, app)).toMatchObject({ status: 'success' });
    expect(ran()).toBe('1.0.0');
  });
});

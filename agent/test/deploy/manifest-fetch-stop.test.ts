import { generateKeyPairSync } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { signedDeployApi, type DeployApi } from '../../src/deploy/deploy-api.js';
import { DeployStateStore } from '../../src/deploy/deploy-state.js';
import { ManifestSource } from '../../src/deploy/manifest-source.js';
import { deployJobRunner, type DeployContext } from '../../src/deploy/run-deploy-job.js';
import { startBlobServer, type BlobServer } from '../files/blob-server.js';
import { assignment, harness, sh, type Harness } from '../jobs/harness.js';
import { captureLogger } from '../log-capture.js';
import { FakeDeployCoordinator } from './fake-deploy.js';
import { eventually } from '../../../test/helpers/poll.js';
import fs from 'node:fs';

/**
 * A coordinator that answers the manifest request a byte at a time, each under the request's idle
 * timeout, for ever: the update job's timeout, a cancel and the shutdown still end the job, and a
 * manifest request is given up after its own limit (docs/agent.md, "What the agent does with an update").
 */

let blobs: BlobServer;
let fake: FakeDeployCoordinator;
let drip: http.Server;
let origin: string;
/** Manifest requests the drip server got, and those whose connection the agent closed (this test's server only). */
let seen = { requests: 0, closed: 0 };
const open: Harness[] = [];

beforeEach(async () => {
  blobs = await startBlobServer();
  fake = new FakeDeployCoordinator(blobs);
  const counts = { requests: 0, closed: 0 };
  seen = counts;
  drip = http.createServer((req, res) => {
    counts.requests += 1;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.write('{"apps": [');
    const timer = setInterval(() => res.write(' '), 100);
    res.on('close', () => {
      clearInterval(timer);
      counts.closed += 1;
    });
  });
  await new Promise<void>((resolve) => drip.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(drip.address() as AddressInfo).port}`;
});
afterEach(async () => {
  for (const h of open.splice(0)) {
    await h.stop();
    fs.rmSync(h.stateDir, { recursive: true, force: true });
  }
  drip.closeAllConnections();
  await new Promise((resolve) => drip.close(resolve));
  await blobs.close();
});

function dripApi(): DeployApi {
  const { privateKey } = generateKeyPairSync('ed25519');
  const signed = signedDeployApi({ origin, agentId: fake.agentId, privateKey });
  return { fetchDesired: (signal) => signed.fetchDesired(signal), report: fake.api.report };
}

function source(store: DeployStateStore, fetchTimeoutMs?: number): ManifestSource {
  const { logger } = captureLogger();
  return new ManifestSource({
    api: dripApi(),
    store,
    serverKey: fake.serverKey,
    agentId: fake.agentId,
    now: Date.now,
    logger,
    ...(fetchTimeoutMs ? { fetchTimeoutMs } : {}),
  });
}

function make(): Harness {
  const quick = { name: 'quick', steps: [sh('true')] };
  const h = harness([{ name: 'update', steps: [sh('true')] }, quick], {
    runUpdateJob: (stateDir) => {
      const store = DeployStateStore.open(stateDir);
      const context: DeployContext = { api: dripApi(), manifests: source(store), store, postponeOptional: false };
      return deployJobRunner(context);
    },
  });
  open.push(h);
  return h;
}

describe('an update job whose manifest answer trickles in', () => {
  it('ends timed_out at its timeout, the request closed', async () => {
    const h = make();
    const app = fake.addApp({ slug: 'kiosk' });
    fake.publish(app, '1.0.0');
    const event = fake.event(app, { timeoutMs: 1000 });
    const started = performance.now();
    h.manager.onDeployEvent(event);
    await eventually(() => h.finishOf(event.jobId) !== undefined, 15_000);
    expect(performance.now() - started).toBeLessThan(10_000);
    expect(h.finishOf(event.jobId)).toMatchObject({
      status: 'timed_out',
      errorMessage: 'the job timed out while the signed manifest was being fetched; nothing was installed',
    });
    await eventually(() => seen.closed === 1 && seen.requests === 1);
  });

  it('ends cancelled on a cancel, and the job behind it runs', async () => {
    const h = make();
    const app = fake.addApp({ slug: 'kiosk' });
    fake.publish(app, '1.0.0');
    const event = fake.event(app);
    h.manager.onDeployEvent(event);
    await eventually(() => seen.requests === 1);
    const next = assignment('quick');
    h.manager.onJobEvent(next);
    h.manager.onCancelEvent({ jobId: event.jobId });
    await eventually(() => h.finishOf(next.jobId) !== undefined);
    expect(h.finishOf(event.jobId)).toMatchObject({
      status: 'cancelled',
      errorMessage:
        'cancelled: a user cancelled the job while the signed manifest was being fetched; nothing was installed',
    });
    expect(h.finishOf(next.jobId)).toMatchObject({ status: 'success' });
    await eventually(() => seen.closed === 1);
  });

  it('does not hold the shutdown past its grace', async () => {
    const h = make();
    const app = fake.addApp({ slug: 'kiosk' });
    fake.publish(app, '1.0.0');
    const event = fake.event(app);
    h.manager.onDeployEvent(event);
    await eventually(() => seen.requests === 1);
    const started = performance.now();
    await h.manager.shutdown(200);
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(h.finishOf(event.jobId)?.status).toBe('cancelled');
  });
});

describe('the manifest source', () => {
  it('gives a request up after its limit in all, however the bytes trickle', async () => {
    const manifests = source(DeployStateStore.open(fs.mkdtempSync('/tmp/drover-manifest-')), 1500);
    const started = performance.now();
    await expect(manifests.fetch()).rejects.toThrow('the manifest request took longer than 1.5s; given up');
    expect(performance.now() - started).toBeLessThan(10_000);
    await eventually(() => seen.requests === 1 && seen.closed === 1);
  });

  it('lets a fetch waiting behind a slow one go at its signal', async () => {
    const manifests = source(DeployStateStore.open(fs.mkdtempSync('/tmp/drover-manifest-')), 20_000);
    const first = manifests.fetch();
    first.catch(() => {});
    await eventually(() => seen.requests === 1);
    const stop = new AbortController();
    const second = manifests.fetch(stop.signal);
    setTimeout(() => stop.abort('cancelled: a user cancelled the job'), 100);
    const started = performance.now();
    await expect(second).rejects.toBe('cancelled: a user cancelled the job');
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(seen.requests).toBe(1); // it never sent its own request
  });
});

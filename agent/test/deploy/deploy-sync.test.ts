import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, onTestFinished, vi } from 'vitest';
import { DeployStateStore } from '../../src/deploy/deploy-state.js';
import { DeploySync } from '../../src/deploy/deploy-sync.js';
import { startBlobServer, type BlobServer } from '../files/blob-server.js';
import { captureLogger } from '../log-capture.js';
import { FakeDeployCoordinator, unreachable } from './fake-deploy.js';

let blobs: BlobServer;
let fake: FakeDeployCoordinator;
let stateDir: string;
let store: DeployStateStore;
const syncs: DeploySync[] = [];

beforeEach(async () => {
  blobs = await startBlobServer();
  fake = new FakeDeployCoordinator(blobs);
  stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'drover-deploy-sync-'));
  store = DeployStateStore.open(stateDir);
});
afterEach(async () => {
  for (const s of syncs.splice(0)) s.stop();
  await blobs.close();
  fs.rmSync(stateDir, { recursive: true, force: true });
});

function sync(options: { postponeOptional?: boolean; busy?: string[]; intervalMs?: number; connected?: boolean } = {}) {
  const { logger, records } = captureLogger();
  const s = new DeploySync({
    api: fake.api,
    manifests: fake.manifests(store, logger),
    store,
    logger,
    postponeOptional: options.postponeOptional ?? false,
    intervalMs: options.intervalMs ?? 60_000,
    connected: () => options.connected ?? true,
    busy: () => new Set(options.busy ?? []),
  });
  syncs.push(s);
  return { s, records };
}

describe('the pull fallback', () => {
  it('reports every bound application once as the baseline, then only those behind their desired release', async () => {
    const upToDate = fake.addApp({ slug: 'up-to-date' });
    const r = fake.publish(upToDate, '1.0.0');
    store.update(upToDate.applicationId, { current: { releaseId: r.releaseId, version: '1.0.0', sequence: 1 } });
    const fresh = fake.addApp({ slug: 'fresh' });
    const empty = fake.addApp({ slug: 'no-release' });
    const { s, records } = sync();
    await s.check('connect');
    expect(fake.reports).toEqual([
      {
        applicationId: upToDate.applicationId,
        currentReleaseId: r.releaseId,
        currentVersion: '1.0.0',
        currentSequence: 1,
        state: 'installed',
        error: null,
      },
      { applicationId: fresh.applicationId, state: 'idle', error: null },
      { applicationId: empty.applicationId, state: 'idle', error: null },
    ]);
    fake.reports.length = 0;
    fake.publish(fresh, '0.9.0');
    await s.check('poll');
    expect(fake.reports).toEqual([{ applicationId: fresh.applicationId, state: 'idle', error: null }]);
    expect(records.map((x) => x.msg)).toContain(
      'fresh: the desired release is 0.9.0 (sequence 1), this agent has nothing installed by this agent; asking the coordinator for the update',
    );
  });

  it('takes an entry bound to its request whatever the Date said, remembers the binding, and refuses a replayed answer', async () => {
    const app = fake.addApp();
    fake.publish(app, '1.0.0');
    fake.bindRequests = true;
    const { s, records } = sync();
    fake.clockOffset = -7200; // issued "two hours ago" by the coordinator's clock as the agent knows it: still fresh
    await s.check('poll');
    expect(fake.reports.map((r) => r.state)).toEqual(['idle']);
    expect(store.get(app.applicationId).requestBound).toBe(true);
    fake.reports.length = 0;
    fake.clockOffset = 0;
    fake.replayOf = 'the-nonce-of-an-earlier-request'; // an answer recorded earlier, replayed with its Date
    await s.check('poll');
    expect(fake.reports).toEqual([
      {
        applicationId: app.applicationId,
        state: 'refused',
        error: expect.stringMatching(
          /answers another request than this one .*: a manifest held back or replayed; nothing was installed$/,
        ),
      },
    ]);
    fake.reports.length = 0;
    fake.replayOf = null;
    fake.bindRequests = false; // an answer recorded before the coordinator bound its entries
    await s.check('poll');
    expect(fake.reports.map((r) => r.error)).toEqual([expect.stringMatching(/not bound to this request/)]);
    expect(records.findLast((r) => r.level === 50)?.msg).toMatch(
      /an old manifest replayed \(or the coordinator downgraded\)$/,
    );
  });

  it('leaves applications whose update job is queued or running here alone', async () => {
    const app = fake.addApp();
    fake.publish(app, '1.0.0');
    const { s } = sync({ busy: [app.applicationId] });
    await s.check('connect');
    expect(fake.reports).toEqual([]);
  });

  it('reports a postponed release as postponed and a release that failed here with its failure, not as idle', async () => {
    const postponed = fake.addApp();
    const p = fake.publish(postponed, '2.0.0');
    store.update(postponed.applicationId, { postponed: { releaseId: p.releaseId, version: '2.0.0', sequence: 1 } });
    const failing = fake.addApp();
    const f = fake.publish(failing, '3.0.0');
    store.update(failing.applicationId, {
      lastFailure: { releaseId: f.releaseId, state: 'refused', error: 'bad checksum', at: new Date().toISOString() },
    });
    const { s } = sync({ postponeOptional: true });
    await s.check('connect');
    expect(fake.reports.map((r) => [r.state, r.error])).toEqual([
      ['postponed', null],
      ['refused', 'bad checksum'],
    ]);
  });

  it('reports a forced release as idle even when it was postponed', async () => {
    const app = fake.addApp({ forced: true });
    const p = fake.publish(app, '2.0.0');
    store.update(app.applicationId, { postponed: { releaseId: p.releaseId, version: '2.0.0', sequence: 1 } });
    const { s } = sync({ postponeOptional: true });
    await s.check('connect');
    expect(fake.reports.map((r) => r.state)).toEqual(['idle']);
  });

  it('refuses and reports a manifest entry whose signature does not verify, or replayed, then reports again once accepted', async () => {
    const app = fake.addApp();
    fake.publish(app, '1.0.0');
    const { s, records } = sync();
    fake.tamper = (entry) => ({ ...entry, payload: { ...entry.payload, min_sequence: 9 } });
    await s.check('connect');
    expect(fake.reports).toEqual([
      {
        applicationId: app.applicationId,
        state: 'refused',
        // The same words as the update job's refusal of the same entry.
        error: 'the manifest signature does not verify with the server key pinned at enrollment; nothing was installed',
      },
    ]);
    expect(records.find((r) => r.level === 50)?.msg).toBe(
      `refused a manifest entry of application ${app.applicationId}: the manifest signature does not verify with the server key pinned at enrollment`,
    );
    fake.tamper = null;
    fake.reports.length = 0;
    await s.check('poll'); // accepted: issued_at recorded
    expect(fake.reports.map((r) => r.state)).toEqual(['idle']);
    fake.reports.length = 0;
    fake.clockOffset = -60;
    await s.check('poll');
    expect(fake.reports).toEqual([
      {
        applicationId: app.applicationId,
        state: 'refused',
        error: expect.stringMatching(/an old manifest replayed; nothing was installed$/),
      },
    ]);
    expect(records.findLast((r) => r.level === 50)?.msg).toMatch(
      new RegExp(
        `^refused a manifest entry of application ${app.applicationId}: the signed manifest was issued at .*an old manifest replayed$`,
      ),
    );
    fake.clockOffset = 0;
    fake.reports.length = 0;
    await s.check('poll'); // accepted again: the installation is reported again, replacing the refusal
    expect(fake.reports.map((r) => r.state)).toEqual(['idle']);
  });

  it('warns once per application about entries without agent_id and expires_at (an older coordinator), and uses them', async () => {
    const app = fake.addApp({ slug: 'kiosk' });
    fake.publish(app, '1.0.0');
    fake.signing = ({ agent_id: _agent, expires_at: _expires, ...payload }) => payload as never;
    const { s, records } = sync();
    await s.check('connect');
    await s.check('poll');
    expect(records.filter((r) => r.level === 40).map((r) => r.msg)).toEqual([
      'the signed manifest of kiosk names no agent or expiry (a coordinator older than this agent): accepted without the device-binding and expiry checks; upgrade the coordinator',
    ]);
    expect(fake.reports.map((r) => r.state)).toEqual(['idle', 'idle']);
  });

  it('logs an unreachable coordinator once, not at every poll', async () => {
    fake.addApp();
    const { s, records } = sync();
    fake.fetchErrors.push(unreachable(), unreachable());
    await s.check('poll');
    await s.check('poll');
    expect(records.filter((r) => r.level === 40).map((r) => r.msg)).toEqual([
      'could not fetch the signed manifest (Cannot reach the coordinator: connection refused); trying again in 1m',
    ]);
  });

  /** The poll interval runs on fake timers: each poll is let go by the test. */
  function fakeInterval(): void {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    onTestFinished(() => void vi.useRealTimers());
  }

  it('polls every interval while connected', async () => {
    fakeInterval();
    const app = fake.addApp();
    fake.publish(app, '1.0.0');
    const { s } = sync({ intervalMs: 60_000 });
    s.start();
    await vi.advanceTimersByTimeAsync(59_999);
    expect(fake.fetches).toBe(0);
    for (let poll = 1; poll <= 3; poll++) {
      await vi.advanceTimersByTimeAsync(poll === 1 ? 1 : 60_000);
      await vi.waitFor(() => expect(fake.reports).toHaveLength(poll)); // behind: reported at every poll
      expect(fake.fetches).toBe(poll);
    }
    s.stop();
    await vi.advanceTimersByTimeAsync(600_000);
    expect(fake.fetches).toBe(3);
  });

  it('does not poll while the stream is down', async () => {
    fakeInterval();
    fake.addApp();
    const { s } = sync({ intervalMs: 60_000, connected: false });
    s.start();
    await vi.advanceTimersByTimeAsync(600_000);
    expect(fake.fetches).toBe(0);
  });
});

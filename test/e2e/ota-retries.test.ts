import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enrollTestAgent, type TestAgent } from '../helpers/agent.js';
import { startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import { fakeClock } from '../helpers/members.js';
import {
  artifactUploader,
  bindDevices,
  createApp,
  getBinding,
  release,
  uploadArtifact,
  type BindingBody,
} from '../helpers/ota.js';
import { eventually } from '../helpers/poll.js';

/**
 * What happens after an update job ends (docs/ota.md, "Update jobs"): retries with backoff, the
 * failure limit, postponement and rejection, driven by a fake clock and the retry sweep.
 */

const clock = fakeClock();
let t: TestCoordinator;
let artifact: string;
beforeAll(async () => {
  t = await startTestCoordinator({ clock });
  artifact = await uploadArtifact(await artifactUploader(t), 'retry artifact');
});
afterAll(() => t?.close());

const signed = (agent: TestAgent, method: string, path: string, body?: unknown) =>
  agent.request(method, path, body, { now: clock.now() });
const finish = (agent: TestAgent, jobId: string, status: string, errorMessage: string | null = null) =>
  signed(agent, 'POST', `/v1/agent/jobs/${jobId}/finish`, { status, exitCode: 1, errorMessage, output: {} });

/** An agent bound to a new application with one published release: it has a pending update job. */
async function device(slug: string): Promise<{ agent: TestAgent; appId: string; binding: BindingBody }> {
  const agent = await enrollTestAgent(t.owner, t.orgId);
  const app = await createApp(t.owner, t.orgId, { slug });
  await release(t.owner, t.orgId, app.id, { version: '1', artifactFileId: artifact });
  const [binding] = await bindDevices(t.owner, t.orgId, app.id, [agent.agentId]);
  expect(binding!.activeJobId).toEqual(expect.any(String));
  return { agent, appId: app.id, binding: binding! };
}

/** The binding once its job ended and was settled (activeJobId no longer `jobId`). */
const settled = (appId: string, bindingId: string, jobId: string) =>
  eventually(async () => {
    const b = await getBinding(t.owner, t.orgId, appId, bindingId);
    return b.activeJobId !== jobId ? b : null;
  });

const sweep = () => t.coordinator.ctx.ota.sweep();

describe('after an update job fails', () => {
  it('retries after 30 s, then after 2 min, each time issuing a new job', async () => {
    const { agent, appId, binding } = await device('retry-backoff');
    expect((await finish(agent, binding.activeJobId!, 'failed', 'install script exited 1')).status).toBe(200);
    const waiting = await settled(appId, binding.id, binding.activeJobId!);
    expect(waiting.activeJobId).toBeNull();
    clock.advance(29_000);
    await sweep();
    expect((await getBinding(t.owner, t.orgId, appId, binding.id)).activeJobId).toBeNull();
    clock.advance(1_000);
    await sweep();
    const second = await getBinding(t.owner, t.orgId, appId, binding.id);
    expect(second.activeJobId).toEqual(expect.any(String));
    expect(second.activeJobId).not.toBe(binding.activeJobId);
    expect((await finish(agent, second.activeJobId!, 'timed_out')).status).toBe(200);
    await settled(appId, binding.id, second.activeJobId!);
    clock.advance(119_000);
    await sweep();
    expect((await getBinding(t.owner, t.orgId, appId, binding.id)).activeJobId).toBeNull();
    clock.advance(1_000);
    await sweep();
    expect((await getBinding(t.owner, t.orgId, appId, binding.id)).activeJobId).toEqual(expect.any(String));
  });

  it('stops after five failures in a row until a manual reconcile', async () => {
    const { agent, appId, binding } = await device('retry-limit');
    let jobId = binding.activeJobId!;
    for (let attempt = 1; attempt <= 5; attempt++) {
      expect((await finish(agent, jobId, 'failed', `attempt ${attempt}`)).status).toBe(200);
      await settled(appId, binding.id, jobId);
      clock.advance(3_600_000);
      await sweep();
      const b = await getBinding(t.owner, t.orgId, appId, binding.id);
      if (attempt < 5) {
        expect(b.activeJobId).toEqual(expect.any(String));
        jobId = b.activeJobId!;
      } else {
        expect(b.activeJobId).toBeNull();
      }
    }
    const reconciled = await t.owner.post<BindingBody>(
      `/orgs/${t.orgId}/apps/${appId}/devices/${binding.id}/reconcile`,
    );
    expect(reconciled.status).toBe(200);
    expect(reconciled.body.activeJobId).toEqual(expect.any(String));
    expect(reconciled.body.activeJobId).not.toBe(jobId);
  });

  it('holds a release the device postponed until a reconcile', async () => {
    const { agent, appId, binding } = await device('postponed');
    const report = await signed(agent, 'POST', '/v1/agent/deploy/report', { applicationId: appId, state: 'postponed' });
    expect(report.status).toBe(200);
    expect((await finish(agent, binding.activeJobId!, 'cancelled', 'postponed by local policy')).status).toBe(200);
    await settled(appId, binding.id, binding.activeJobId!);
    clock.advance(3_600_000);
    await sweep();
    const held = await getBinding(t.owner, t.orgId, appId, binding.id);
    expect(held).toMatchObject({ activeJobId: null, state: 'postponed', current: null });
    expect(held.desired).not.toBeNull();
    const reconciled = await t.owner.post<BindingBody>(
      `/orgs/${t.orgId}/apps/${appId}/devices/${binding.id}/reconcile`,
    );
    expect(reconciled.body.activeJobId).toEqual(expect.any(String));
  });

  it('issues a rejected job again after a short delay, without counting it as a failure', async () => {
    const { agent, appId, binding } = await device('rejected');
    const rejected = await signed(agent, 'POST', `/v1/agent/jobs/${binding.activeJobId}/reject`, {
      reason: 'queue_full',
    });
    expect(rejected.status).toBe(200);
    await settled(appId, binding.id, binding.activeJobId!);
    clock.advance(30_000);
    await sweep();
    const again = await getBinding(t.owner, t.orgId, appId, binding.id);
    expect(again.activeJobId).toEqual(expect.any(String));
    expect(again.activeJobId).not.toBe(binding.activeJobId);
  });

  it('gives a revoked agent no new update job', async () => {
    const { appId, binding, agent } = await device('revoked');
    expect((await t.owner.delete(`/orgs/${t.orgId}/agents/${agent.agentId}`)).status).toBe(200);
    await settled(appId, binding.id, binding.activeJobId!);
    expect((await t.owner.get(`/jobs/${binding.activeJobId}`)).body.status).toBe('failed');
    clock.advance(3_600_000);
    await sweep();
    expect((await getBinding(t.owner, t.orgId, appId, binding.id)).activeJobId).toBeNull();
  });
});

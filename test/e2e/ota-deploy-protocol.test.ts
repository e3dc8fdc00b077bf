import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publicKeyFromBase64, verifyBytes, verifyManifestEntry } from '@drover/shared';
import { enrollTestAgent, type TestAgent } from '../helpers/agent.js';
import { startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import type { ApiClient } from '../helpers/http.js';
import { fakeClock, outsider } from '../helpers/members.js';
import {
  artifactUploader,
  bindDevices,
  createApp,
  createRelease,
  getBinding,
  release,
  uploadArtifact,
  yankRelease,
  type ReleaseBody,
} from '../helpers/ota.js';
import { openAgentStream, type AgentStream } from '../helpers/sse.js';
import { sha256 } from '../helpers/storage.js';
import { eventually } from '../helpers/poll.js';

/**
 * The agent's side of OTA through HTTP (docs/ota.md): the `deploy` event on the stream, the
 * signed desired manifest, and reports, with the desired and forced rules of CONTRACT §7.
 */

const UNKNOWN_ID = '00000000-0000-4000-8000-000000000000';
const ref = (r: ReleaseBody) => ({ releaseId: r.id, version: r.version, sequence: r.sequence });

/** JSON with keys sorted at every level: RFC 8785 for payloads of strings, integers, booleans and null. */
function sortedJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(sortedJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const keys = Object.keys(value).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${sortedJson((value as Record<string, unknown>)[k])}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

const clock = fakeClock();
let t: TestCoordinator;
let owner: ApiClient;
let uploader: ApiClient;
const streams: AgentStream[] = [];
beforeAll(async () => {
  t = await startTestCoordinator({ clock });
  owner = t.owner;
  uploader = await artifactUploader(t);
});
afterAll(async () => {
  for (const s of streams) s.close();
  await t?.close();
});

/** Signed requests stamped with the coordinator's (fake) time. */
const signed = (agent: TestAgent, method: string, path: string, body?: unknown) =>
  agent.request(method, path, body, { now: clock.now() });
const report = (agent: TestAgent, body: Record<string, unknown>) =>
  signed(agent, 'POST', '/v1/agent/deploy/report', body);
const desired = (agent: TestAgent) => signed(agent, 'GET', '/v1/agent/deploy/desired');
const finish = (agent: TestAgent, jobId: string, status: string, errorMessage: string | null = null) =>
  signed(agent, 'POST', `/v1/agent/jobs/${jobId}/finish`, {
    status,
    exitCode: status === 'success' ? 0 : 1,
    errorMessage,
    output: {},
  });

async function stream(agent: TestAgent): Promise<AgentStream> {
  const s = await openAgentStream(t.url, agent);
  streams.push(s);
  expect(s.status).toBe(200);
  return s;
}
const nextDeploy = async (s: AgentStream, jobId?: string, timeoutMs?: number) =>
  JSON.parse((await s.next((e) => e.event === 'deploy' && (jobId === undefined || e.id === jobId), timeoutMs)).data);

/** Expects no `deploy` event of `jobId` within half a second. */
const expectNotSent = (s: AgentStream, jobId: string) =>
  expect(
    nextDeploy(s, jobId, 500).then(
      () => 'sent',
      () => 'not sent',
    ),
  ).resolves.toBe('not sent');

/**
 * A new agent with its stream open, bound to a new application with one published release:
 * its update job is issued and its `deploy` event received.
 */
async function pushedUpdate(slug: string, version: string) {
  const agent = await enrollTestAgent(owner, t.orgId);
  const s = await stream(agent);
  const app = await createApp(owner, t.orgId, { slug });
  const artifactFileId = await uploadArtifact(uploader, `${slug} ${version}`);
  const published = await release(owner, t.orgId, app.id, { version, artifactFileId });
  const [binding] = await bindDevices(owner, t.orgId, app.id, [agent.agentId]);
  const jobId = binding!.activeJobId!;
  await nextDeploy(s, jobId);
  return { agent, s, app, release: published, jobId };
}

describe('the deploy event', () => {
  it('pushes an update job as a `deploy` event with the application id and a fresh download URL at every send', async () => {
    const agent = await enrollTestAgent(owner, t.orgId);
    const s1 = await stream(agent);
    const artifact = await uploadArtifact(uploader, 'kiosk 1.0 bytes', 'kiosk-1.0.tar.gz');
    const app = await createApp(owner, t.orgId, { slug: 'deploy-event', updateWorkflowName: 'apply-kiosk' });
    const r = await release(owner, t.orgId, app.id, { version: '1.0', artifactFileId: artifact });
    const [binding] = await bindDevices(owner, t.orgId, app.id, [agent.agentId]);
    const first = await nextDeploy(s1);
    expect(first).toMatchObject({
      jobId: binding!.activeJobId,
      kind: 'update',
      applicationId: app.id,
      workflowName: 'apply-kiosk',
      status: 'pending',
      ref: null,
      debug: false,
      params: {
        release_id: r.id,
        version: '1.0',
        channel: 'stable',
        sequence: r.sequence,
        forced: false,
        checksum_sha256: sha256('kiosk 1.0 bytes'),
        artifact: {
          __type: 'FileRef',
          id: artifact,
          downloadUrl: expect.stringContaining(`/v1/storage/blobs/${artifact}?`),
          size: 'kiosk 1.0 bytes'.length,
          sha256: sha256('kiosk 1.0 bytes'),
          filename: 'kiosk-1.0.tar.gz',
        },
      },
    });
    expect(s1.events.filter((e) => e.event === 'job')).toEqual([]);
    const bytes = await fetch(first.params.artifact.downloadUrl);
    expect(await bytes.text()).toBe('kiosk 1.0 bytes');
    s1.close();

    clock.advance(5_000);
    const s2 = await stream(agent);
    const again = await nextDeploy(s2, binding!.activeJobId!);
    expect(again.params.artifact.downloadUrl).not.toBe(first.params.artifact.downloadUrl);
    expect(await (await fetch(again.params.artifact.downloadUrl)).text()).toBe('kiosk 1.0 bytes');
    s2.close();
  });

  it('sends a still-pending job again when the agent reports (it dropped the event: queue full)', async () => {
    const { agent, s, app, jobId } = await pushedUpdate('repush', '1');
    const res = await report(agent, { applicationId: app.id, state: 'idle' });
    expect(res.status).toBe(200);
    expect(res.body.activeJobId).toBe(jobId);
    const resent = await nextDeploy(s, jobId);
    expect(resent.jobId).toBe(jobId);
    // Once the agent took it, a report does not send it again.
    expect((await signed(agent, 'POST', `/v1/agent/jobs/${resent.jobId}/accept`)).status).toBe(200);
    await report(agent, { applicationId: app.id, state: 'downloading' });
    await expectNotSent(s, jobId);
  });

  it('replaces a pending job when the application gets a new update workflow', async () => {
    const { s, app, jobId: first } = await pushedUpdate('renamed-workflow', '1');
    const patched = await owner.patch(`/orgs/${t.orgId}/apps/${app.id}`, {
      body: { updateWorkflowName: 'install-v2' },
    });
    expect(patched.status, patched.text).toBe(200);
    expect((await owner.get(`/jobs/${first}`)).body).toMatchObject({
      status: 'cancelled',
      errorMessage: "superseded: the application's update workflow changed before the agent took the job",
    });
    const [after] = (await owner.get(`/orgs/${t.orgId}/apps/${app.id}/devices`)).body;
    expect(after.activeJobId).not.toBe(first);
    expect((await owner.get(`/jobs/${after.activeJobId}`)).body).toMatchObject({
      status: 'pending',
      workflowName: 'install-v2',
      kind: 'update',
      applicationId: app.id,
    });
    expect((await nextDeploy(s, after.activeJobId)).jobId).toBe(after.activeJobId);
    s.close();
  });

  it('cancels a pending job for the release the device reports installed, and sends nothing', async () => {
    const { agent, s, app, release: r, jobId } = await pushedUpdate('already-there', '3');
    const res = await report(agent, {
      applicationId: app.id,
      currentReleaseId: r.id,
      currentVersion: '3',
      currentSequence: r.sequence,
      state: 'installed',
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ activeJobId: null, current: { releaseId: r.id }, desired: { releaseId: r.id } });
    expect((await owner.get(`/jobs/${jobId}`)).body).toMatchObject({
      status: 'cancelled',
      errorMessage: 'not needed: the device reported the release already installed',
    });
    await expectNotSent(s, jobId);
    s.close();
  });
});

describe('the signed desired manifest', () => {
  it('gives one entry per bound application, signed over RFC 8785 JSON with the server key', async () => {
    const agent = await enrollTestAgent(owner, t.orgId);
    const artifact = await uploadArtifact(uploader, 'manifest bytes');
    const withRelease = await createApp(owner, t.orgId, { slug: 'manifest-a', updateWorkflowName: 'upd' });
    const r1 = await release(owner, t.orgId, withRelease.id, {
      version: '1.0',
      artifactFileId: artifact,
      updatePolicy: 'mandatory',
    });
    const r2 = await release(owner, t.orgId, withRelease.id, { version: '2.0', artifactFileId: artifact });
    const empty = await createApp(owner, t.orgId, { slug: 'manifest-b', defaultChannel: 'beta' });
    await bindDevices(owner, t.orgId, withRelease.id, [agent.agentId]);
    await bindDevices(owner, t.orgId, empty.id, [agent.agentId]);
    const nonce = 'nonce-of-this-manifest-request';
    const res = await agent.request('GET', '/v1/agent/deploy/desired', undefined, { now: clock.now(), nonce });
    expect(res.status).toBe(200);
    expect(res.body.apps).toHaveLength(2);
    const [a, b] = res.body.apps;
    const nowSeconds = Math.floor(clock.now() / 1000);
    expect(a.payload).toEqual({
      agent_id: agent.agentId,
      application_id: withRelease.id,
      slug: 'manifest-a',
      channel: 'stable',
      update_workflow: 'upd',
      current: null,
      desired: {
        release_id: r2.id,
        version: '2.0',
        sequence: r2.sequence,
        channel: 'stable',
        workflow_name: 'upd',
        checksum_sha256: sha256('manifest bytes'),
        size: 'manifest bytes'.length,
        download_url: expect.stringContaining(`/v1/storage/blobs/${artifact}?`),
        download_expires_in: 900,
      },
      min_version: '1.0',
      min_sequence: r1.sequence,
      forced: true,
      issued_at: nowSeconds,
      expires_at: nowSeconds + 3600, // DROVER_MANIFEST_TTL_SECONDS
      nonce: expect.stringMatching(/^[A-Za-z0-9_-]{22,}$/),
      request_nonce: nonce, // the entry answers this request: a replayed answer cannot pass for fresh
    });
    expect(b.payload).toMatchObject({
      agent_id: agent.agentId,
      application_id: empty.id,
      channel: 'beta',
      desired: null,
      min_sequence: 0,
      expires_at: nowSeconds + 3600,
      request_nonce: nonce,
    });
    expect(b.payload.min_version).toBe('');
    const key = publicKeyFromBase64(agent.serverPublicKey)!;
    for (const entry of res.body.apps) {
      expect(verifyBytes(key, Buffer.from(sortedJson(entry.payload)), entry.signature)).toBe(true);
      expect(verifyManifestEntry(entry, agent.serverPublicKey)).toBe(true);
    }
    expect(await (await fetch(a.payload.desired.download_url)).text()).toBe('manifest bytes');
    // Tampering with any field breaks the signature.
    expect(verifyManifestEntry({ ...a, payload: { ...a.payload, forced: false } }, agent.serverPublicKey)).toBe(false);
    expect(
      verifyManifestEntry(
        { ...a, payload: { ...a.payload, desired: { ...a.payload.desired, checksum_sha256: '0'.repeat(64) } } },
        agent.serverPublicKey,
      ),
    ).toBe(false);
    // Each issuance has its own nonce.
    const again = await desired(agent);
    expect(again.body.apps[0].payload.nonce).not.toBe(a.payload.nonce);
  });

  it('signs every manifest from the current releases: a publish or a yank shows at the next fetch', async () => {
    const agent = await enrollTestAgent(owner, t.orgId);
    const artifact = await uploadArtifact(uploader, 'cache bytes');
    const app = await createApp(owner, t.orgId, { slug: 'manifest-fresh', updateWorkflowName: 'upd' });
    const r1 = await release(owner, t.orgId, app.id, { version: '1.0', artifactFileId: artifact });
    await bindDevices(owner, t.orgId, app.id, [agent.agentId]);
    expect((await desired(agent)).body.apps[0].payload.desired.release_id).toBe(r1.id);
    const r2 = await release(owner, t.orgId, app.id, { version: '2.0', artifactFileId: artifact });
    expect((await desired(agent)).body.apps[0].payload.desired.release_id).toBe(r2.id);
    const yanked = await owner.post(`/orgs/${t.orgId}/apps/${app.id}/releases/${r2.id}/yank`);
    expect(yanked.status).toBe(200);
    expect((await desired(agent)).body.apps[0].payload.desired.release_id).toBe(r1.id);
    const renamed = await owner.patch(`/orgs/${t.orgId}/apps/${app.id}`, { body: { updateWorkflowName: 'upd2' } });
    expect(renamed.status).toBe(200);
    expect((await desired(agent)).body.apps[0].payload.update_workflow).toBe('upd2');
    // A deleted application keeps its bindings' rows, and leaves the manifest.
    expect((await owner.delete(`/orgs/${t.orgId}/apps/${app.id}`)).status).toBe(204);
    expect((await desired(agent)).body).toEqual({ apps: [] });
  });

  it('lists nothing for an agent bound to no application, and needs a signature', async () => {
    const agent = await enrollTestAgent(owner, t.orgId);
    expect((await desired(agent)).body).toEqual({ apps: [] });
    expect((await t.api.get('/agent/deploy/desired')).status).toBe(401);
    expect((await signed(agent, 'GET', '/v1/agent/deploy/desired?all=1')).status).toBe(422);
  });
});

describe('reports and convergence (CONTRACT §7 through the API)', () => {
  it('takes the first report as the baseline, then converges after a publish through a successful job', async () => {
    const agent = await enrollTestAgent(owner, t.orgId);
    const app = await createApp(owner, t.orgId, { slug: 'converge' });
    const [binding] = await bindDevices(owner, t.orgId, app.id, [agent.agentId]);
    const baseline = await report(agent, { applicationId: app.id, currentVersion: '0.9', state: 'idle' });
    expect(baseline.status).toBe(200);
    expect(baseline.body).toEqual({
      applicationId: app.id,
      current: { releaseId: null, version: '0.9', sequence: 0 },
      desired: null,
      forced: false,
      state: 'idle',
      activeJobId: null,
    });
    const r1 = await release(owner, t.orgId, app.id, {
      version: '1.0',
      artifactFileId: await uploadArtifact(uploader, 'v1'),
    });
    const pending = await getBinding(owner, t.orgId, app.id, binding!.id);
    expect(pending).toMatchObject({ desired: ref(r1), current: { version: '0.9' }, lastReportAt: expect.any(String) });
    const jobId = pending.activeJobId!;
    expect((await signed(agent, 'POST', `/v1/agent/jobs/${jobId}/start`)).status).toBe(200);
    const installing = await report(agent, { applicationId: app.id, currentVersion: '0.9', state: 'installing' });
    expect(installing.body).toMatchObject({ state: 'installing', activeJobId: jobId });
    expect((await finish(agent, jobId, 'success')).status).toBe(200);
    const done = await eventually(async () => {
      const b = await getBinding(owner, t.orgId, app.id, binding!.id);
      return b.activeJobId === null ? b : null;
    });
    expect(done).toMatchObject({ current: ref(r1), desired: ref(r1), forced: false });
    const installed = await report(agent, { applicationId: app.id, currentReleaseId: r1.id, state: 'installed' });
    expect(installed.body).toEqual({
      applicationId: app.id,
      current: ref(r1),
      desired: ref(r1),
      forced: false,
      state: 'installed',
      activeJobId: null,
    });
    expect((await owner.get(`/jobs/${jobId}`)).body.status).toBe('success');
  });

  it('forces devices below a mandatory release and not those at or above it', async () => {
    const below = await enrollTestAgent(owner, t.orgId);
    const above = await enrollTestAgent(owner, t.orgId);
    const app = await createApp(owner, t.orgId, { slug: 'mandatory' });
    const file = await uploadArtifact(uploader, 'm');
    const r1 = await release(owner, t.orgId, app.id, { version: '1', artifactFileId: file });
    const r2 = await release(owner, t.orgId, app.id, { version: '2', artifactFileId: file, updatePolicy: 'mandatory' });
    const r3 = await release(owner, t.orgId, app.id, { version: '3', artifactFileId: file });
    await bindDevices(owner, t.orgId, app.id, [below.agentId, above.agentId]);
    const b = await report(below, { applicationId: app.id, currentReleaseId: r1.id, state: 'idle' });
    expect(b.body).toMatchObject({ current: ref(r1), desired: ref(r3), forced: true });
    const a = await report(above, { applicationId: app.id, currentReleaseId: r2.id, currentSequence: r2.sequence });
    expect(a.body).toMatchObject({ current: ref(r2), desired: ref(r3), forced: false });
    expect((await owner.get(`/jobs/${b.body.activeJobId}`)).body).toMatchObject({
      forced: true,
      forceReason: expect.stringContaining('mandatory'),
      params: { forced: true, release_id: r3.id },
    });
    const manifest = await desired(below);
    expect(manifest.body.apps[0].payload).toMatchObject({ forced: true, min_sequence: r2.sequence, min_version: '2' });
  });

  it('forces a downgrade to the previous published release when the current one is yanked', async () => {
    const agent = await enrollTestAgent(owner, t.orgId);
    const app = await createApp(owner, t.orgId, { slug: 'yank-downgrade' });
    const file = await uploadArtifact(uploader, 'y');
    const r1 = await release(owner, t.orgId, app.id, { version: '1', artifactFileId: file });
    const r2 = await release(owner, t.orgId, app.id, { version: '2', artifactFileId: file });
    const [binding] = await bindDevices(owner, t.orgId, app.id, [agent.agentId]);
    expect((await finish(agent, binding!.activeJobId!, 'success')).status).toBe(200);
    await eventually(async () => (await getBinding(owner, t.orgId, app.id, binding!.id)).activeJobId === null);
    await yankRelease(owner, t.orgId, app.id, r2.id);
    const after = await getBinding(owner, t.orgId, app.id, binding!.id);
    expect(after).toMatchObject({ current: ref(r2), desired: ref(r1), forced: true });
    expect((await owner.get(`/jobs/${after.activeJobId}`)).body.params).toMatchObject({
      release_id: r1.id,
      forced: true,
    });
  });

  it('refuses reports for applications the agent is not bound to with 404', async () => {
    const agent = await enrollTestAgent(owner, t.orgId);
    const unbound = await createApp(owner, t.orgId, { slug: 'not-bound' });
    expect((await report(agent, { applicationId: unbound.id })).status).toBe(404);
    expect((await report(agent, { applicationId: UNKNOWN_ID })).status).toBe(404);
    const stranger = await outsider(owner, t.orgId, 'stranger@example.test');
    const theirs = await createApp(stranger.client, stranger.orgId, { slug: 'theirs' });
    const res = await report(agent, { applicationId: theirs.id });
    expect(res.status).toBe(404);
    expect(res.body).toMatchObject({ statusCode: 404, code: 'not_found' });
  });

  it('refuses a reported release that is not one of the application or disagrees with it (422)', async () => {
    const agent = await enrollTestAgent(owner, t.orgId);
    const app = await createApp(owner, t.orgId, { slug: 'report-check' });
    const other = await createApp(owner, t.orgId, { slug: 'report-other' });
    const file = await uploadArtifact(uploader, 'c');
    const mine = await createRelease(owner, t.orgId, app.id, { version: '1', artifactFileId: file });
    const theirs = await createRelease(owner, t.orgId, other.id, { version: '1', artifactFileId: file });
    await bindDevices(owner, t.orgId, app.id, [agent.agentId]);
    const cases: [Record<string, unknown>, string][] = [
      [{ currentReleaseId: theirs.id }, 'body.currentReleaseId'],
      [{ currentReleaseId: UNKNOWN_ID }, 'body.currentReleaseId'],
      [{ currentReleaseId: mine.id, currentSequence: mine.sequence + 1 }, 'body.currentSequence'],
      [{ currentReleaseId: mine.id, currentVersion: '2' }, 'body.currentVersion'],
    ];
    for (const [body, path] of cases) {
      const res = await report(agent, { applicationId: app.id, ...body });
      expect(res.status).toBe(422);
      expect(res.body.details.map((d: { path: string }) => d.path)).toEqual([path]);
    }
  });

  it.each([
    ['no application id', { applicationId: undefined, state: 'idle' }, 'body.applicationId'],
    ['an application id that is not a UUID', { applicationId: 'kiosk' }, 'body.applicationId'],
    ['a numeric application id', { applicationId: 7 }, 'body.applicationId'],
    ['a numeric version', { currentVersion: 1 }, 'body.currentVersion'],
    ['a huge version', { currentVersion: 'v'.repeat(256) }, 'body.currentVersion'],
    ['a version with a control character', { currentVersion: 'a\u0000b' }, 'body.currentVersion'],
    ['a negative sequence', { currentSequence: -1 }, 'body.currentSequence'],
    ['a fractional sequence', { currentSequence: 1.5 }, 'body.currentSequence'],
    ['a sequence given as a string', { currentSequence: '3' }, 'body.currentSequence'],
    ['an unknown state', { state: 'exploded' }, 'body.state'],
    ['a huge error', { error: 'e'.repeat(2001) }, 'body.error'],
    ['an error that is an object', { error: { message: 'x' } }, 'body.error'],
    ['an unknown field', { installedAt: 'now' }, 'body.installedAt'],
  ])('refuses a report with %s (422)', async (_name, body, path) => {
    const agent = await enrollTestAgent(owner, t.orgId);
    const res = await report(agent, { applicationId: UNKNOWN_ID, ...body });
    expect(res.status).toBe(422);
    expect(res.body.code).toBe('validation_failed');
    expect(res.body.details.map((d: { path: string }) => d.path)).toContain(path);
  });

  it('refuses unsigned and malformed report bodies without a 500', async () => {
    expect((await t.api.post('/agent/deploy/report', { body: { applicationId: UNKNOWN_ID } })).status).toBe(401);
    const agent = await enrollTestAgent(owner, t.orgId);
    for (const rawBody of ['{', '[]', 'null', '"x"']) {
      const res = await agent.request('POST', '/v1/agent/deploy/report', undefined, { rawBody, now: clock.now() });
      expect(res.status).toBeGreaterThanOrEqual(400);
      expect(res.status).toBeLessThan(500);
    }
  });
});

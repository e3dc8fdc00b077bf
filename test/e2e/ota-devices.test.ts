import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enrollTestAgent, type TestAgent } from '../helpers/agent.js';
import { startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import type { ApiClient } from '../helpers/http.js';
import { addUser, outsider } from '../helpers/members.js';
import {
  artifactUploader,
  bindDevices,
  createApp,
  getBinding,
  listBindings,
  release,
  setDeviceSelector,
  uploadArtifact,
  yankRelease,
  type AppBody,
  type AppUpdateBody,
  type BindingBody,
  type ReleaseBody,
} from '../helpers/ota.js';

const BINDING_FIELDS = [
  'activeJobId',
  'agentId',
  'applicationId',
  'cancelledJobId',
  'channel',
  'current',
  'desired',
  'error',
  'forced',
  'id',
  'lastReportAt',
  'nextWindowAt',
  'origin',
  'state',
  'waitingForWindow',
];
const UNKNOWN_ID = '00000000-0000-4000-8000-000000000000';
const ref = (r: ReleaseBody) => ({ releaseId: r.id, version: r.version, sequence: r.sequence });

describe('OTA device bindings', () => {
  let t: TestCoordinator;
  let member: ApiClient;
  let uploader: ApiClient;
  let artifact: string;
  const agents: TestAgent[] = [];
  beforeAll(async () => {
    t = await startTestCoordinator();
    member = (await addUser(t.owner, t.orgId, 'member@example.test')).client;
    uploader = await artifactUploader(t);
    artifact = await uploadArtifact(uploader, 'the artifact');
    for (let i = 0; i < 8; i++) agents.push(await enrollTestAgent(t.owner, t.orgId, { hostname: `device-${i}` }));
  });
  afterAll(() => t?.close());

  const devices = (app: AppBody) => `/orgs/${t.orgId}/apps/${app.id}/devices`;

  it('binds agents on the default channel; with nothing published they desire nothing and get no job', async () => {
    const app = await createApp(member, t.orgId, { slug: 'empty', defaultChannel: 'beta' });
    const res = await member.post<BindingBody[]>(devices(app), { body: { agentIds: [agents[0]!.agentId] } });
    expect(res.status).toBe(201);
    expect(res.body).toHaveLength(1);
    expect(Object.keys(res.body[0]!).sort()).toEqual(BINDING_FIELDS);
    expect(res.body[0]).toEqual({
      id: expect.any(String),
      applicationId: app.id,
      agentId: agents[0]!.agentId,
      channel: 'beta',
      origin: 'manual',
      current: null,
      desired: null,
      forced: false,
      state: null,
      error: null,
      activeJobId: null,
      cancelledJobId: null,
      lastReportAt: null,
      waitingForWindow: false,
      nextWindowAt: null,
    });
    const list = await member.get(devices(app));
    expect(list.body).toEqual(res.body);
  });

  it('refuses to bind an agent twice with 409, binding none of the call', async () => {
    const app = await createApp(member, t.orgId, { slug: 'twice' });
    await bindDevices(member, t.orgId, app.id, [agents[0]!.agentId]);
    const res = await member.post(devices(app), { body: { agentIds: [agents[1]!.agentId, agents[0]!.agentId] } });
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ code: 'conflict', details: { agentIds: [agents[0]!.agentId] } });
    expect((await member.get<BindingBody[]>(devices(app))).body.map((b) => b.agentId)).toEqual([agents[0]!.agentId]);
  });

  it('refuses unknown, foreign, revoked and repeated agents with 422 naming each', async () => {
    const app = await createApp(member, t.orgId, { slug: 'bad-agents' });
    const stranger = await outsider(t.owner, t.orgId, 'stranger@example.test');
    const foreign = await enrollTestAgent(stranger.client, stranger.orgId);
    const revoked = await enrollTestAgent(t.owner, t.orgId);
    expect((await t.owner.delete(`/orgs/${t.orgId}/agents/${revoked.agentId}`)).status).toBe(200);
    const res = await member.post(devices(app), {
      body: { agentIds: [agents[2]!.agentId, UNKNOWN_ID, foreign.agentId, revoked.agentId] },
    });
    expect(res.status).toBe(422);
    expect(res.body.details.map((d: { path: string }) => d.path)).toEqual([
      'body.agentIds.1',
      'body.agentIds.2',
      'body.agentIds.3',
    ]);
    expect((await member.get(devices(app))).body).toEqual([]);
    const twice = await member.post(devices(app), {
      body: { agentIds: [agents[2]!.agentId, agents[2]!.agentId.toUpperCase()] },
    });
    expect(twice.status).toBe(422);
    // An id listed twice is named at its index, with every other unusable entry of the call.
    const again = await member.post(devices(app), {
      body: { agentIds: [agents[2]!.agentId, UNKNOWN_ID, agents[2]!.agentId] },
    });
    expect(again.status).toBe(422);
    expect(again.body.details).toEqual([
      { path: 'body.agentIds.1', message: `no agent \`${UNKNOWN_ID}\` in the organization` },
      { path: 'body.agentIds.2', message: `\`${agents[2]!.agentId}\` is listed twice` },
    ]);
    expect((await member.get(devices(app))).body).toEqual([]);
  });

  it.each([
    ['no agent list', {}, 'body.agentIds'],
    ['an empty agent list', { agentIds: [] }, 'body.agentIds'],
    ['a string instead of a list', { agentIds: UNKNOWN_ID }, 'body.agentIds'],
    ['an id that is not a UUID', { agentIds: ['agent-1'] }, 'body.agentIds.0'],
    ['the same id twice', { agentIds: [UNKNOWN_ID, UNKNOWN_ID] }, 'body.agentIds.1'],
    ['a bad channel', { agentIds: [UNKNOWN_ID], channel: '' }, 'body.channel'],
    ['an unknown field', { agentIds: [UNKNOWN_ID], current: 'x' }, 'body.current'],
    ['too many agents', { agentIds: Array.from({ length: 1001 }, () => UNKNOWN_ID) }, 'body.agentIds'],
  ])('refuses %s with 422', async (_name, body, path) => {
    const app = await createApp(member, t.orgId, { slug: `bad-body-${Math.random().toString(36).slice(2, 10)}` });
    const res = await member.post(devices(app), { body });
    expect(res.status).toBe(422);
    expect(res.body.details.map((d: { path: string }) => d.path)).toContain(path);
  });

  it('issues an update job at bind when a release is published: a job of kind update outside the trigger list', async () => {
    const app = await createApp(member, t.orgId, { slug: 'issued', updateWorkflowName: 'install-kiosk' });
    const r = await release(member, t.orgId, app.id, { version: '1.0', artifactFileId: artifact });
    const [binding] = await bindDevices(member, t.orgId, app.id, [agents[3]!.agentId]);
    expect(binding).toMatchObject({ desired: ref(r), current: null, forced: false });
    expect(binding!.activeJobId).toEqual(expect.any(String));
    const job = await member.get(`/jobs/${binding!.activeJobId}`);
    expect(job.status).toBe(200);
    expect(job.body).toMatchObject({
      id: binding!.activeJobId,
      kind: 'update',
      source: 'ota',
      status: 'pending',
      triggerId: null,
      workflowId: null,
      agentId: agents[3]!.agentId,
      workflowName: 'install-kiosk',
      forced: false,
      params: {
        artifact: { __type: 'FileRef', id: artifact },
        release_id: r.id,
        version: '1.0',
        channel: 'stable',
        sequence: r.sequence,
        forced: false,
        checksum_sha256: r.checksumSha256,
      },
    });
    expect(Object.keys(job.body.params).sort()).toEqual([
      'artifact',
      'channel',
      'checksum_sha256',
      'forced',
      'release_id',
      'sequence',
      'version',
    ]);
    const triggerJobs = await member.get<{ id: string }[]>(`/orgs/${t.orgId}/jobs?limit=200`);
    expect(triggerJobs.status).toBe(200);
    expect(triggerJobs.body.map((j) => j.id)).not.toContain(binding!.activeJobId);
    const stranger = await outsider(t.owner, t.orgId, 'stranger2@example.test');
    expect((await stranger.client.get(`/jobs/${binding!.activeJobId}`)).status).toBe(404);
  });

  it('never issues a second job while one is active, however often it is re-evaluated', async () => {
    const app = await createApp(member, t.orgId, { slug: 'one-job' });
    await release(member, t.orgId, app.id, { version: '1', artifactFileId: artifact });
    const [binding] = await bindDevices(member, t.orgId, app.id, [agents[4]!.agentId]);
    const first = binding!.activeJobId;
    const path = `${devices(app)}/${binding!.id}/reconcile`;
    const again = await Promise.all(Array.from({ length: 10 }, () => member.post<BindingBody>(path)));
    expect(new Set(again.map((r) => r.body.activeJobId))).toEqual(new Set([first]));
    await release(member, t.orgId, app.id, { version: '2', artifactFileId: artifact });
    // Update jobs are in no list of the API (a binding shows only its active one).
    const count = await t.sql.get<{ n: number }>(
      "SELECT COUNT(*) AS n FROM jobs WHERE agent_id = ? AND kind = 'update' AND status = 'pending'",
      agents[4]!.agentId,
    );
    expect(count).toEqual({ n: 1 });
  });

  it('replaces a pending job when the desired release changes, and converges on a yank to the previous release', async () => {
    const app = await createApp(member, t.orgId, { slug: 'superseded' });
    const r1 = await release(member, t.orgId, app.id, { version: '1', artifactFileId: artifact });
    const [binding] = await bindDevices(member, t.orgId, app.id, [agents[5]!.agentId]);
    const job1 = binding!.activeJobId!;
    const r2 = await release(member, t.orgId, app.id, { version: '2', artifactFileId: artifact });
    const afterPublish = await getBinding(member, t.orgId, app.id, binding!.id);
    expect(afterPublish.desired).toEqual(ref(r2));
    expect(afterPublish.activeJobId).not.toBe(job1);
    expect((await member.get(`/jobs/${job1}`)).body).toMatchObject({ status: 'cancelled' });
    expect((await member.get(`/jobs/${afterPublish.activeJobId}`)).body.params.release_id).toBe(r2.id);
    await yankRelease(member, t.orgId, app.id, r2.id);
    const afterYank = await getBinding(member, t.orgId, app.id, binding!.id);
    expect(afterYank.desired).toEqual(ref(r1));
    expect((await member.get(`/jobs/${afterYank.activeJobId}`)).body.params.release_id).toBe(r1.id);
  });

  it('changes the channel, re-evaluating the binding, and audits it', async () => {
    const app = await createApp(member, t.orgId, { slug: 'channels' });
    const stable = await release(member, t.orgId, app.id, { version: '1', artifactFileId: artifact });
    const beta = await release(member, t.orgId, app.id, {
      version: '2-beta',
      artifactFileId: artifact,
      channel: 'beta',
    });
    const [binding] = await bindDevices(member, t.orgId, app.id, [agents[6]!.agentId]);
    expect(binding!.desired).toEqual(ref(stable));
    const res = await member.patch<BindingBody>(`${devices(app)}/${binding!.id}`, { body: { channel: 'beta' } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ channel: 'beta', desired: ref(beta) });
    expect((await member.get(`/jobs/${res.body.activeJobId}`)).body.params).toMatchObject({
      release_id: beta.id,
      channel: 'beta',
    });
    for (const body of [{}, { channel: null }, { channel: 'BETA' }, { channel: 'beta', agentId: UNKNOWN_ID }]) {
      expect((await member.patch(`${devices(app)}/${binding!.id}`, { body })).status).toBe(422);
    }
    const audit = await t.owner.get(`/orgs/${t.orgId}/audit?action=device.update`);
    expect(audit.body[0]).toMatchObject({
      targetId: binding!.id,
      metadata: { applicationId: app.id, channel: { from: 'stable', to: 'beta' } },
    });
  });

  it('unbinds a device (its pending update job is cancelled) and answers 404 afterwards', async () => {
    const app = await createApp(member, t.orgId, { slug: 'unbound' });
    await release(member, t.orgId, app.id, { version: '1', artifactFileId: artifact });
    const [binding] = await bindDevices(member, t.orgId, app.id, [agents[7]!.agentId]);
    const res = await member.delete(`${devices(app)}/${binding!.id}`);
    expect(res.status).toBe(204);
    expect((await member.get(`/jobs/${binding!.activeJobId}`)).body.status).toBe('cancelled');
    expect((await member.get(`${devices(app)}/${binding!.id}`)).status).toBe(404);
    expect((await member.delete(`${devices(app)}/${binding!.id}`)).status).toBe(404);
    expect((await member.post(`${devices(app)}/${binding!.id}/reconcile`)).status).toBe(404);
    // It can be bound again.
    expect((await bindDevices(member, t.orgId, app.id, [agents[7]!.agentId])).length).toBe(1);
  });

  it('hides bindings of other applications and organizations behind 404', async () => {
    const app = await createApp(member, t.orgId, { slug: 'hidden' });
    const other = await createApp(member, t.orgId, { slug: 'hidden-other' });
    const [binding] = await bindDevices(member, t.orgId, app.id, [agents[1]!.agentId]);
    expect((await member.get(`${devices(other)}/${binding!.id}`)).status).toBe(404);
    expect((await member.patch(`${devices(other)}/${binding!.id}`, { body: { channel: 'x' } })).status).toBe(404);
    const stranger = await outsider(t.owner, t.orgId, 'stranger3@example.test');
    expect((await stranger.client.get(devices(app))).status).toBe(404);
    expect((await stranger.client.post(devices(app), { body: { agentIds: [agents[1]!.agentId] } })).status).toBe(404);
    expect((await stranger.client.delete(`${devices(app)}/${binding!.id}`)).status).toBe(404);
  });

  it('audits device.bind, device.reconcile and device.unbind', async () => {
    const app = await createApp(member, t.orgId, { slug: 'audited-devices' });
    const [binding] = await bindDevices(member, t.orgId, app.id, [agents[2]!.agentId]);
    await member.post(`${devices(app)}/${binding!.id}/reconcile`);
    await member.delete(`${devices(app)}/${binding!.id}`);
    const audit = await t.owner.get<{ action: string; targetId: string; metadata: Record<string, unknown> }[]>(
      `/orgs/${t.orgId}/audit`,
    );
    const mine = audit.body.filter((e) => e.targetId === binding!.id);
    expect(mine.map((e) => e.action)).toEqual(['device.unbind', 'device.reconcile', 'device.bind']);
    expect(mine[2]!.metadata).toEqual({ applicationId: app.id, agentId: agents[2]!.agentId, channel: 'stable' });
  });

  describe('device groups (PATCH deviceSelector)', () => {
    const app = (a: AppBody) => `/orgs/${t.orgId}/apps/${a.id}`;
    const label = async (agent: TestAgent, labels: Record<string, string>) => {
      const res = await member.patch(`/orgs/${t.orgId}/agents/${agent.agentId}`, { body: { labels } });
      expect(res.status, res.text).toBe(200);
    };
    const report = async (agent: TestAgent, labels: Record<string, string>) => {
      const res = await agent.request('PUT', '/v1/agent/labels', { labels: { os: 'linux', arch: 'x64', ...labels } });
      expect(res.status, res.text).toBe(200);
    };
    let kiosks: TestAgent[];
    let gateway: TestAgent;
    beforeAll(async () => {
      kiosks = [
        await enrollTestAgent(t.owner, t.orgId, { hostname: 'kiosk-1' }),
        await enrollTestAgent(t.owner, t.orgId, { hostname: 'kiosk-2' }),
      ];
      gateway = await enrollTestAgent(t.owner, t.orgId, { hostname: 'gateway-1' });
      await label(kiosks[0]!, { role: 'kiosk' });
      await report(kiosks[1]!, { role: 'kiosk', site: 'berlin' });
      await report(gateway, { role: 'gateway' });
    });

    it('binds the agents the selector matches on the default channel, evaluated at once, and says what it did', async () => {
      const a = await createApp(member, t.orgId, { slug: 'group-kiosk', defaultChannel: 'beta' });
      const r = await release(member, t.orgId, a.id, { version: '1.0', artifactFileId: artifact, channel: 'beta' });
      const res = await member.patch<AppUpdateBody>(app(a), { body: { deviceSelector: 'role = kiosk' } });
      expect(res.status, res.text).toBe(200);
      expect(res.body).toEqual({
        ...a,
        deviceSelector: 'role=kiosk',
        deviceGroup: { matching: 2, bound: 2, unbound: 0 },
      });
      expect((await member.get(app(a))).body.deviceSelector).toBe('role=kiosk');
      const bound = await member.get<BindingBody[]>(devices(a));
      expect(bound.body.map((b) => [b.agentId, b.origin, b.channel]).sort()).toEqual(
        kiosks.map((k) => [k.agentId, 'selector', 'beta']).sort(),
      );
      for (const b of bound.body) expect(b).toMatchObject({ desired: ref(r), activeJobId: expect.any(String) });

      // The same selector again binds nothing more and is no change; a manual binding of the gateway stays.
      await bindDevices(member, t.orgId, a.id, [gateway.agentId]);
      const again = await member.patch<AppUpdateBody>(app(a), { body: { deviceSelector: 'role=kiosk' } });
      expect(again.body.deviceGroup).toEqual({ matching: 2, bound: 0, unbound: 0 });

      const audit = await t.owner.get<{ action: string; targetId: string; actorId: string; metadata: any }[]>(
        `/orgs/${t.orgId}/audit?limit=200`,
      );
      const updates = audit.body.filter((e) => e.action === 'app.update' && e.targetId === a.id);
      expect(updates.map((e) => e.metadata)).toEqual([
        {
          slug: 'group-kiosk',
          changed: ['deviceSelector'],
          deviceSelector: 'role=kiosk',
          deviceGroup: { matching: 2, bound: 2, unbound: 0 },
        },
      ]);
      const binds = audit.body.filter((e) => e.action === 'device.bind' && e.metadata.applicationId === a.id);
      expect(binds.map((e) => e.metadata.origin ?? 'manual').sort()).toEqual(['manual', 'selector', 'selector']);
      expect(binds.find((e) => e.metadata.origin === 'selector')?.metadata).toMatchObject({
        channel: 'beta',
        deviceSelector: 'role=kiosk',
      });
    });

    it('says when the selector matches no agent, and binds nothing', async () => {
      const a = await createApp(member, t.orgId, { slug: 'group-none' });
      const res = await member.patch<AppUpdateBody>(app(a), { body: { deviceSelector: 'role=printer' } });
      expect(res.status).toBe(200);
      expect(res.body.deviceGroup).toEqual({ matching: 0, bound: 0, unbound: 0 });
      expect((await member.get(devices(a))).body).toEqual([]);
    });

    it('refuses a selector that does not parse (naming the position), an empty one and a long one with 422', async () => {
      const a = await createApp(member, t.orgId, { slug: 'group-bad' });
      const refused = async (deviceSelector: unknown) => {
        const res = await member.patch(app(a), { body: { deviceSelector } });
        expect(res.status, res.text).toBe(422);
        expect(res.body.code).toBe('validation_failed');
        expect(res.body.details.map((d: { path: string }) => d.path)).toEqual(['body.deviceSelector']);
        return res.body.details[0].message as string;
      };
      expect(await refused('role in kiosk')).toBe(
        "is not a label selector: at position 8: expected '(', found 'kiosk'",
      );
      expect(await refused('   ')).toMatch(/^must select by at least one label/);
      expect(await refused('')).toBe('must not be empty');
      expect(await refused(`role=${'a'.repeat(1020)}`)).toMatch(/1024/);
      expect(await refused(7)).toMatch(/string/);
      expect((await member.get(app(a))).body.deviceSelector).toBeNull();
      expect((await member.get(devices(a))).body).toEqual([]);
    });

    it('refuses to remove the binding of an agent the selector matches (409), and null removes only the selector’s bindings', async () => {
      const a = await createApp(member, t.orgId, { slug: 'group-null' });
      await bindDevices(member, t.orgId, a.id, [kiosks[0]!.agentId]);
      await setDeviceSelector(member, t.orgId, a.id, 'role=kiosk');
      const bindings = await listBindings(member, t.orgId, a.id);
      expect(bindings.map((b) => [b.agentId, b.origin])).toEqual([
        [kiosks[0]!.agentId, 'manual'],
        [kiosks[1]!.agentId, 'selector'],
      ]);
      for (const b of bindings) {
        const res = await member.delete(`${devices(a)}/${b.id}`);
        expect(res.status).toBe(409);
        expect(res.body).toMatchObject({
          code: 'conflict',
          details: { deviceSelector: 'role=kiosk', origin: b.origin },
        });
      }
      const cleared = await setDeviceSelector(member, t.orgId, a.id, null);
      expect(cleared).toMatchObject({ deviceSelector: null, deviceGroup: { matching: 0, bound: 0, unbound: 1 } });
      expect((await listBindings(member, t.orgId, a.id)).map((b) => b.agentId)).toEqual([kiosks[0]!.agentId]);
    });

    it('binds an agent at enrollment when the selector matches an agent without labels, never a revoked one', async () => {
      const other = await outsider(t.owner, t.orgId, 'groups@example.test');
      const a = await createApp(other.client, other.orgId, { slug: 'unlabelled' });
      const first = await enrollTestAgent(other.client, other.orgId, { hostname: 'bare-1' });
      expect((await setDeviceSelector(other.client, other.orgId, a.id, '!role')).deviceGroup).toEqual({
        matching: 1,
        bound: 1,
        unbound: 0,
      });
      const second = await enrollTestAgent(other.client, other.orgId, { hostname: 'bare-2' });
      const listed = await listBindings(other.client, other.orgId, a.id);
      expect(listed.map((b) => [b.agentId, b.origin])).toEqual([
        [first.agentId, 'selector'],
        [second.agentId, 'selector'],
      ]);
      // Revoked, it keeps its binding as revocation keeps bindings, and is not counted.
      expect((await other.client.delete(`/orgs/${other.orgId}/agents/${first.agentId}`)).status).toBe(200);
      expect((await setDeviceSelector(other.client, other.orgId, a.id, '!role')).deviceGroup).toEqual({
        matching: 1,
        bound: 0,
        unbound: 0,
      });
      // Its labels no longer match: the selector removes its binding; they match again: a revoked agent is not bound.
      await other.client.patch(`/orgs/${other.orgId}/agents/${first.agentId}`, { body: { labels: { role: 'x' } } });
      await other.client.patch(`/orgs/${other.orgId}/agents/${first.agentId}`, { body: { labels: {} } });
      expect((await listBindings(other.client, other.orgId, a.id)).map((b) => b.agentId)).toEqual([second.agentId]);
    });
  });
});

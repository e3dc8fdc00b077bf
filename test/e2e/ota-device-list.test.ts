import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enrollTestAgent, type TestAgent } from '../helpers/agent.js';
import { startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import { outsider } from '../helpers/members.js';
import {
  artifactUploader,
  bindDevices,
  createApp,
  release,
  setDeviceSelector,
  uploadArtifact,
  type AppBody,
  type BindingBody,
} from '../helpers/ota.js';

/**
 * An application's devices as its page reads them (docs/ota.md, "Devices of an application"): a
 * page at a time with filters, counted by what the release counts and previews need, and what a
 * device group would do, on both databases.
 */
describe("an application's devices: pages, counts, the device group preview", () => {
  let t: TestCoordinator;
  let app: AppBody;
  const agents = new Map<string, TestAgent>();
  const id = (name: string) => agents.get(name)!.agentId;
  const path = (tail = '') => `/orgs/${t.orgId}/apps/${app.id}${tail}`;

  beforeAll(async () => {
    t = await startTestCoordinator();
    for (const name of ['kiosk-0', 'kiosk-1', 'kiosk-2', 'kiosk-3', 'gateway-0', 'gateway-1']) {
      const agent = await enrollTestAgent(t.owner, t.orgId, { hostname: name });
      agents.set(name, agent);
      const res = await t.owner.patch(`/orgs/${t.orgId}/agents/${agent.agentId}`, {
        body: { labels: { role: name.split('-')[0]! } },
      });
      expect(res.status, res.text).toBe(200);
    }
    app = await createApp(t.owner, t.orgId, { slug: 'signage' });
    await bindDevices(t.owner, t.orgId, app.id, [id('kiosk-0'), id('kiosk-1')]);
    await bindDevices(t.owner, t.orgId, app.id, [id('gateway-0')], 'beta');
  });
  afterAll(() => t?.close());

  const list = async (query: string) => {
    const res = await t.owner.get<BindingBody[]>(path(`/devices?${query}`));
    expect(res.status, res.text).toBe(200);
    return { agents: res.body.map((b) => b.agentId), total: res.headers.get('x-total-count'), res };
  };

  it('walks the devices a page at a time, in bind order, the pages adding up to the whole list', async () => {
    const whole = await t.owner.get<BindingBody[]>(path('/devices'));
    expect(whole.body.map((b) => b.agentId)).toEqual([id('kiosk-0'), id('kiosk-1'), id('gateway-0')]);
    expect(whole.headers.get('x-next-cursor')).toBeNull();
    const walked: string[] = [];
    let cursor = '';
    for (;;) {
      const page = await list(`limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      expect(page.total).toBe('3');
      walked.push(...page.agents);
      cursor = page.res.headers.get('x-next-cursor') ?? '';
      if (!cursor) break;
    }
    expect(walked).toEqual(whole.body.map((b) => b.agentId));
  });

  it('narrows the list by channel, state, agent name or hostname in any case, and agents', async () => {
    expect(await list('channel=beta')).toMatchObject({ agents: [id('gateway-0')], total: '1' });
    expect(await list('q=GATEWAY')).toMatchObject({ agents: [id('gateway-0')], total: '1' });
    expect(await list('q=kiosk&limit=1')).toMatchObject({ agents: [id('kiosk-0')], total: '2' });
    expect(await list(`agentId=${id('kiosk-1')}&agentId=${id('kiosk-3')}`)).toMatchObject({
      agents: [id('kiosk-1')],
      total: '1',
    });
    expect(await list('state=failed')).toMatchObject({ agents: [], total: '0' });
    // `none`: the devices that never reported a state (`drover app devices --state none`).
    expect(await list('state=none&limit=1')).toMatchObject({ agents: [id('kiosk-0')], total: '3' });
    expect(await list('q=nothing-like-it')).toMatchObject({ agents: [], total: '0' });
  });

  it('counts the devices by channel, current and desired release, update under way and state', async () => {
    expect((await t.owner.get(path('/device-counts'))).body).toEqual([
      {
        channel: 'stable',
        origin: 'manual',
        current: null,
        desiredReleaseId: null,
        updating: false,
        state: null,
        devices: 2,
      },
      {
        channel: 'beta',
        origin: 'manual',
        current: null,
        desiredReleaseId: null,
        updating: false,
        state: null,
        devices: 1,
      },
    ]);
    const artifact = await uploadArtifact(await artifactUploader(t), 'signage 1.0');
    const r = await release(t.owner, t.orgId, app.id, { version: '1.0', artifactFileId: artifact });
    expect((await t.owner.get(path('/device-counts'))).body).toEqual([
      {
        channel: 'stable',
        origin: 'manual',
        current: null,
        desiredReleaseId: r.id,
        updating: true,
        state: null,
        devices: 2,
      },
      {
        channel: 'beta',
        origin: 'manual',
        current: null,
        desiredReleaseId: null,
        updating: false,
        state: null,
        devices: 1,
      },
    ]);
  });

  it('previews a device group by the rule that applies it, changing nothing', async () => {
    const preview = async (selector: string) => {
      const res = await t.owner.get(path(`/device-group/preview?selector=${encodeURIComponent(selector)}`));
      expect(res.status, res.text).toBe(200);
      return res.body;
    };
    expect(await preview('role = kiosk')).toEqual({
      matching: 4,
      names: ['kiosk-0', 'kiosk-1', 'kiosk-2', 'kiosk-3'],
      toBind: 2,
      toRemove: 0,
    });
    expect((await list('')).total).toBe('3');
    expect(await setDeviceSelector(t.owner, t.orgId, app.id, 'role=kiosk')).toMatchObject({
      deviceGroup: { matching: 4, bound: 2, unbound: 0 },
    });
    // The gateways instead: gateway-0 is bound by hand already; the two kiosks the group bound go.
    expect(await preview('role=gateway')).toEqual({
      matching: 2,
      names: ['gateway-0', 'gateway-1'],
      toBind: 1,
      toRemove: 2,
    });
    expect(await preview('role=printer')).toEqual({ matching: 0, names: [], toBind: 0, toRemove: 2 });
  });

  it('refuses what it cannot read with 422 naming the parameter, and hides the application from outsiders', async () => {
    const refused = async (tail: string, where: string) => {
      const res = await t.owner.get<{ details: { path: string }[] }>(path(tail));
      expect(res.status, res.text).toBe(422);
      expect(
        res.body.details.map((d) => d.path),
        tail,
      ).toContain(where);
    };
    await refused('/devices?limit=0', 'querystring.limit');
    await refused('/devices?limit=501', 'querystring.limit');
    await refused('/devices?cursor=abc', 'querystring.cursor');
    await refused('/devices?state=asleep', 'querystring.state');
    await refused('/devices?channel=no%20spaces', 'querystring.channel');
    await refused(`/devices?q=${'k'.repeat(256)}`, 'querystring.q');
    await refused('/devices?agentId=not-an-id', 'querystring.agentId.0');
    await refused('/device-group/preview', 'querystring.selector');
    await refused('/device-group/preview?selector=', 'querystring.selector');
    await refused('/device-group/preview?selector=role%20in%20kiosk', 'querystring.selector');
    const stranger = await outsider(t.owner, t.orgId, 'stranger@example.test');
    for (const tail of ['/devices?limit=1', '/device-counts', '/device-group/preview?selector=role%3Dkiosk']) {
      expect((await stranger.client.get(path(tail))).status).toBe(404);
    }
  });
});

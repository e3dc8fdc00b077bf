import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import type { ApiClient } from '../helpers/http.js';
import { addUser, outsider } from '../helpers/members.js';
import { createApp } from '../helpers/ota.js';

const APP_FIELDS = [
  'createdAt',
  'defaultChannel',
  'deviceSelector',
  'id',
  'maintenanceWindow',
  'nextWindows',
  'notify',
  'releaseKeyGeneration',
  'releaseKeys',
  'slug',
  'updateWorkflowName',
];
const UNKNOWN_ID = '00000000-0000-4000-8000-000000000000';

describe('OTA applications', () => {
  let t: TestCoordinator;
  let member: ApiClient;
  let stranger: { client: ApiClient; orgId: string };
  beforeAll(async () => {
    t = await startTestCoordinator();
    member = (await addUser(t.owner, t.orgId, 'member@example.test')).client;
    stranger = await outsider(t.owner, t.orgId, 'stranger@example.test');
  });
  afterAll(() => t?.close());

  const apps = () => `/orgs/${t.orgId}/apps`;

  it('creates an application with the default channel stable and answers the fixed body', async () => {
    const res = await member.post(apps(), { body: { slug: 'kiosk', updateWorkflowName: 'apply-update' } });
    expect(res.status).toBe(201);
    expect(Object.keys(res.body).sort()).toEqual(APP_FIELDS);
    expect(res.body).toMatchObject({
      slug: 'kiosk',
      updateWorkflowName: 'apply-update',
      defaultChannel: 'stable',
      deviceSelector: null,
      maintenanceWindow: null,
      nextWindows: [],
    });
    const read = await member.get(`${apps()}/${res.body.id}`);
    expect(read.body).toEqual(res.body);
  });

  it('takes a default channel, and lists applications oldest first', async () => {
    const a = await createApp(t.owner, t.orgId, { slug: 'list-a', defaultChannel: 'beta' });
    const b = await createApp(t.owner, t.orgId, { slug: 'list-b' });
    expect(a.defaultChannel).toBe('beta');
    const list = await member.get<{ id: string }[]>(apps());
    expect(list.status).toBe(200);
    const ids = list.body.map((x) => x.id);
    expect(ids.indexOf(a.id)).toBeLessThan(ids.indexOf(b.id));
  });

  it('refuses a duplicate slug within the organization with 409, but not in another organization', async () => {
    await createApp(t.owner, t.orgId, { slug: 'dup' });
    const again = await t.owner.post(apps(), { body: { slug: 'dup', updateWorkflowName: 'other' } });
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ statusCode: 409, code: 'conflict' });
    const elsewhere = await stranger.client.post(`/orgs/${stranger.orgId}/apps`, {
      body: { slug: 'dup', updateWorkflowName: 'apply-update' },
    });
    expect(elsewhere.status).toBe(201);
  });

  it.each([
    ['an upper-case slug', { slug: 'Kiosk', updateWorkflowName: 'u' }, 'body.slug'],
    ['a slug starting with a dash', { slug: '-kiosk', updateWorkflowName: 'u' }, 'body.slug'],
    ['a slug with a dot', { slug: 'ki.osk', updateWorkflowName: 'u' }, 'body.slug'],
    ['a 64-character slug', { slug: 'a'.repeat(64), updateWorkflowName: 'u' }, 'body.slug'],
    ['an empty slug', { slug: '', updateWorkflowName: 'u' }, 'body.slug'],
    ['a numeric slug', { slug: 5, updateWorkflowName: 'u' }, 'body.slug'],
    ['a missing slug', { updateWorkflowName: 'u' }, 'body.slug'],
    ['a missing update workflow', { slug: 'x' }, 'body.updateWorkflowName'],
    ['a workflow name with spaces', { slug: 'x', updateWorkflowName: 'apply update' }, 'body.updateWorkflowName'],
    ['a huge workflow name', { slug: 'x', updateWorkflowName: 'w'.repeat(100_000) }, 'body.updateWorkflowName'],
    ['a channel with spaces', { slug: 'x', updateWorkflowName: 'u', defaultChannel: 'be ta' }, 'body.defaultChannel'],
    ['a null channel', { slug: 'x', updateWorkflowName: 'u', defaultChannel: null }, 'body.defaultChannel'],
    ['an unknown field', { slug: 'x', updateWorkflowName: 'u', owner: 'me' }, 'body.owner'],
  ])('refuses %s with 422 naming the field', async (_name, body, path) => {
    const res = await t.owner.post(apps(), { body });
    expect(res.status).toBe(422);
    expect(res.body.code).toBe('validation_failed');
    expect(res.body.details.map((d: { path: string }) => d.path)).toContain(path);
  });

  it('answers a body that is not JSON or not an object with 4xx, never 500', async () => {
    for (const rawBody of ['{', '[]', '"kiosk"', 'null']) {
      const res = await t.owner.post(apps(), { rawBody, headers: { 'content-type': 'application/json' } });
      expect(res.status).toBeGreaterThanOrEqual(400);
      expect(res.status).toBeLessThan(500);
      expect(res.body).toHaveProperty('code');
    }
  });

  it('changes the update workflow and default channel, and audits only real changes', async () => {
    const app = await createApp(t.owner, t.orgId, { slug: 'patched' });
    const res = await member.patch(`${apps()}/${app.id}`, {
      body: { updateWorkflowName: 'v2', defaultChannel: 'lts' },
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ...app, updateWorkflowName: 'v2', defaultChannel: 'lts', deviceGroup: null });
    expect((await member.patch(`${apps()}/${app.id}`, { body: {} })).body).toEqual(res.body);
    expect((await member.patch(`${apps()}/${app.id}`, { body: { slug: 'renamed' } })).status).toBe(422);
    const audit = await t.owner.get(`/orgs/${t.orgId}/audit?action=app.update`);
    const entries = audit.body.filter((e: { targetId: string }) => e.targetId === app.id);
    expect(entries).toHaveLength(1);
    expect(entries[0].metadata.changed).toEqual(['updateWorkflowName', 'defaultChannel']);
  });

  it('sets a maintenance window, shows the next windows, keeps it through other changes, removes it; audited', async () => {
    const app = await createApp(t.owner, t.orgId, { slug: 'windowed' });
    const path = `${apps()}/${app.id}`;
    const set = await member.patch(path, {
      body: { maintenanceWindow: { cron: '0  2 * * *', timezone: 'europe/berlin', durationMinutes: 120 } },
    });
    expect(set.status).toBe(200);
    const maintenanceWindow = { cron: '0 2 * * *', timezone: 'Europe/Berlin', durationMinutes: 120 };
    expect(set.body.maintenanceWindow).toEqual(maintenanceWindow);
    expect(set.body.nextWindows).toHaveLength(3);
    for (const w of set.body.nextWindows) {
      expect(w.localOpensAt).toMatch(/T02:00:00\+0[12]:00$/);
      expect(Date.parse(w.closesAt) - Date.parse(w.opensAt)).toBe(120 * 60_000);
    }
    expect((await member.get(path)).body).toEqual({ ...set.body, deviceGroup: undefined });
    // The same window again is no change; another field leaves the window as it is.
    await member.patch(path, { body: { maintenanceWindow } });
    expect((await member.patch(path, { body: { defaultChannel: 'lts' } })).body.maintenanceWindow).toEqual(
      maintenanceWindow,
    );
    const removed = await member.patch(path, { body: { maintenanceWindow: null } });
    expect(removed.body).toMatchObject({ maintenanceWindow: null, nextWindows: [] });
    const audit = await t.owner.get(`/orgs/${t.orgId}/audit?action=app.update`);
    const entries = audit.body.filter((e: { targetId: string }) => e.targetId === app.id).reverse();
    expect(entries.map((e: { metadata: unknown }) => e.metadata)).toEqual([
      { slug: 'windowed', changed: ['maintenanceWindow'], maintenanceWindow: { from: null, to: maintenanceWindow } },
      { slug: 'windowed', changed: ['defaultChannel'] },
      { slug: 'windowed', changed: ['maintenanceWindow'], maintenanceWindow: { from: maintenanceWindow, to: null } },
    ]);
  });

  const window = { cron: '0 2 * * *', timezone: 'UTC', durationMinutes: 60 };
  let badWindowAppId: string | undefined;
  const badWindowApp = async () => (badWindowAppId ??= (await createApp(t.owner, t.orgId, { slug: 'bad-window' })).id);
  it.each([
    [
      'a cron expression of four fields',
      { ...window, cron: '0 2 * *' },
      'cron',
      /5-field cron expression.*got 4 field/,
    ],
    ['a cron expression out of range', { ...window, cron: '61 * * * *' }, 'cron', /not a valid cron expression/],
    ['a cron nickname', { ...window, cron: '@daily' }, 'cron', /5-field/],
    ['an unknown time zone', { ...window, timezone: 'Mars/Olympus' }, 'timezone', /IANA time zone.*Mars\/Olympus/],
    ['a bare UTC offset', { ...window, timezone: '+02:00' }, 'timezone', /IANA time zone/],
    ['a duration of zero', { ...window, durationMinutes: 0 }, 'durationMinutes', /from 1 to 10080.*got `0`/],
    ['a duration over 7 days', { ...window, durationMinutes: 10_081 }, 'durationMinutes', /from 1 to 10080/],
    ['a fractional duration', { ...window, durationMinutes: 1.5 }, 'durationMinutes', /integer/],
    ['a duration as a string', { ...window, durationMinutes: '60' }, 'durationMinutes', /integer/],
    ['a missing time zone', { cron: '0 2 * * *', durationMinutes: 60 }, 'timezone', /required/],
    ['an unknown field', { ...window, days: 'weekdays' }, 'days', /not a known field/],
  ])('refuses a window with %s: 422 naming the field', async (_name, maintenanceWindow, field, message) => {
    const id = await badWindowApp();
    const res = await member.patch(`${apps()}/${id}`, { body: { maintenanceWindow } });
    expect(res.status).toBe(422);
    expect(res.body.code).toBe('validation_failed');
    expect(res.body.details).toContainEqual({
      path: `body.maintenanceWindow.${field}`,
      message: expect.stringMatching(message),
    });
    expect((await member.get(`${apps()}/${id}`)).body.maintenanceWindow).toBeNull();
  });

  it('previews a window as the editor types it: normalized, with its next windows, or 422 naming the field', async () => {
    const preview = `/orgs/${t.orgId}/maintenance-windows/preview`;
    const res = await member.get(`${preview}?cron=30%202%20*%20*%201-5&timezone=utc&durationMinutes=90`);
    expect(res.status).toBe(200);
    expect(res.body.maintenanceWindow).toEqual({ cron: '30 2 * * 1-5', timezone: 'UTC', durationMinutes: 90 });
    expect(res.body.nextWindows).toHaveLength(3);
    for (const w of res.body.nextWindows) expect(w.opensAt).toMatch(/T02:30:00\.000Z$/);
    const bad = await member.get(`${preview}?cron=nope&timezone=Nowhere&durationMinutes=0`);
    expect(bad.status).toBe(422);
    expect(bad.body.details.map((d: { path: string }) => d.path)).toEqual([
      'querystring.cron',
      'querystring.timezone',
      'querystring.durationMinutes',
    ]);
    expect((await member.get(`${preview}?cron=0%202%20*%20*%20*&timezone=UTC`)).status).toBe(422);
    expect((await stranger.client.get(`${preview}?cron=0%202%20*%20*%20*&timezone=UTC&durationMinutes=5`)).status).toBe(
      404,
    );
    expect((await t.api.get(`${preview}?cron=0%202%20*%20*%20*&timezone=UTC&durationMinutes=5`)).status).toBe(401);
  });

  it('lets only an owner delete an application; a member gets 403 and the app stays', async () => {
    const app = await createApp(member, t.orgId, { slug: 'doomed' });
    const refused = await member.delete(`${apps()}/${app.id}`);
    expect(refused.status).toBe(403);
    expect(refused.body.code).toBe('forbidden');
    expect((await member.get(`${apps()}/${app.id}`)).status).toBe(200);
    const deleted = await t.owner.delete(`${apps()}/${app.id}`);
    expect(deleted.status).toBe(204);
    expect(deleted.text).toBe('');
    expect((await member.get(`${apps()}/${app.id}`)).status).toBe(404);
    expect((await t.owner.delete(`${apps()}/${app.id}`)).status).toBe(404);
    expect((await member.get<{ id: string }[]>(apps())).body.map((a) => a.id)).not.toContain(app.id);
    // The slug is free again.
    expect((await member.post(apps(), { body: { slug: 'doomed', updateWorkflowName: 'u' } })).status).toBe(201);
  });

  it('hides applications of other organizations behind 404', async () => {
    const app = await createApp(t.owner, t.orgId, { slug: 'private' });
    const path = `${apps()}/${app.id}`;
    expect((await stranger.client.get(path)).status).toBe(404);
    expect((await stranger.client.patch(path, { body: { defaultChannel: 'x' } })).status).toBe(404);
    expect((await stranger.client.delete(path)).status).toBe(404);
    expect((await stranger.client.get(`/orgs/${stranger.orgId}/apps/${app.id}`)).status).toBe(404);
    expect((await t.owner.get(`${apps()}/${UNKNOWN_ID}`)).status).toBe(404);
    expect((await t.owner.get(`${apps()}/not-a-uuid`)).status).toBe(404);
  });

  it('needs a session', async () => {
    const res = await t.api.get(apps());
    expect(res.status).toBe(401);
    expect(res.body.code).toBe('unauthorized');
  });

  it('writes app.create and app.delete audit entries', async () => {
    const app = await createApp(t.owner, t.orgId, { slug: 'audited' });
    await t.owner.delete(`${apps()}/${app.id}`);
    const audit = await t.owner.get<{ action: string; targetId: string; metadata: Record<string, unknown> }[]>(
      `/orgs/${t.orgId}/audit`,
    );
    const mine = audit.body.filter((e) => e.targetId === app.id).map((e) => [e.action, e.metadata.slug]);
    expect(mine).toEqual([
      ['app.delete', 'audited'],
      ['app.create', 'audited'],
    ]);
  });
});

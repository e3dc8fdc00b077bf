import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enrollTestAgent, type TestAgent } from '../helpers/agent.js';
import { auditEntries } from '../helpers/audit.js';
import { startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import type { ApiClient } from '../helpers/http.js';
import { addUser, outsider } from '../helpers/members.js';

const UNKNOWN_ID = '00000000-0000-4000-8000-000000000000';

describe('trigger management', () => {
  let t: TestCoordinator;
  let agent: TestAgent;
  let member: ApiClient;
  let other: { client: ApiClient; orgId: string; agent: TestAgent };
  let path: string;
  const webhook = () => ({
    name: 'deploy',
    agentId: agent.agentId,
    scopeType: 'workflow',
    workflowName: 'deploy',
    responseMode: 'async',
  });

  beforeAll(async () => {
    t = await startTestCoordinator();
    path = `/orgs/${t.orgId}/triggers`;
    agent = await enrollTestAgent(t.owner, t.orgId);
    member = (await addUser(t.owner, t.orgId, 'trigger-member@example.test')).client;
    const o = await outsider(t.owner, t.orgId, 'trigger-outsider@example.test');
    other = { ...o, agent: await enrollTestAgent(o.client, o.orgId) };
  });
  afterAll(() => t?.close());

  const auditOf = (action: string) => auditEntries(t.owner, t.orgId, action);
  const create = async (body: Record<string, unknown>, client: ApiClient = t.owner) => {
    const res = await client.post(path, { body });
    expect(res.status, res.text).toBe(201);
    return res.body;
  };
  const expect422 = (res: { status: number; body: any; text: string }, field: string) => {
    expect(res.status, res.text).toBe(422);
    expect(res.body).toMatchObject({ statusCode: 422, code: 'validation_failed', message: expect.any(String) });
    expect(
      res.body.details.map((d: { path: string }) => d.path),
      res.text,
    ).toContain(`body.${field}`);
  };

  it('creates a webhook trigger with its defaults and shows it in the list', async () => {
    const res = await t.owner.post(path, { body: webhook() });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.any(String),
      name: 'deploy',
      type: 'webhook',
      agentId: agent.agentId,
      agentSelector: null,
      fanout: null,
      maxParallel: null,
      scopeType: 'workflow',
      workflowName: 'deploy',
      responseMode: 'async',
      responseTimeoutMs: 30000,
      allowedRefs: null,
      allowDebug: false,
      notifyProvider: null,
      notifyTeamId: null,
      notifyChannelId: null,
      notifyOn: 'none',
      cronExpression: null,
      cronTimezone: null,
      cronEnabled: null,
      cronMissedPolicy: null,
      cronOverlapPolicy: null,
      params: null,
      ref: null,
      chatTeamId: null,
      chatChannelId: null,
      chatKeyword: null,
      chatAllowedUserIds: null,
      createdAt: expect.any(String),
      updatedAt: res.body.createdAt,
      nextRunAt: null,
      nextRuns: [],
      lastOccurrences: [],
    });
    expect(res.body).not.toHaveProperty('tokenHash');
    expect(res.body).not.toHaveProperty('cronSince');
    expect(res.body).not.toHaveProperty('orgId');
    const got = await t.owner.get(`${path}/${res.body.id}`);
    expect(got.status).toBe(200);
    expect(got.body).toEqual(res.body);
    const list = await t.owner.get(path);
    expect(list.status).toBe(200);
    expect(list.body).toContainEqual(res.body);
    const [entry] = await auditOf('trigger.create');
    expect(entry).toMatchObject({ actorType: 'user', targetType: 'trigger', targetId: res.body.id });
  });

  it('does not require the workflow to be reported yet', async () => {
    const body = await create({ ...webhook(), workflowName: 'not-reported.yet_1' });
    expect(body.workflowName).toBe('not-reported.yet_1');
  });

  it('creates a sync trigger with every webhook option set', async () => {
    const body = await create({
      ...webhook(),
      type: 'webhook',
      responseMode: 'sync',
      responseTimeoutMs: 120000,
      allowedRefs: ['main', 'v1.2.3'],
      allowDebug: true,
      notifyProvider: 'slack',
      notifyTeamId: 'T024BE7LD',
      notifyChannelId: 'C024BE91L',
      notifyOn: 'failure',
    });
    expect(body).toMatchObject({
      responseMode: 'sync',
      responseTimeoutMs: 120000,
      allowedRefs: ['main', 'v1.2.3'],
      allowDebug: true,
      notifyProvider: 'slack',
      notifyOn: 'failure',
    });
  });

  it('notifies about every outcome by default once a provider is set', async () => {
    const body = await create({
      ...webhook(),
      notifyProvider: 'discord',
      notifyTeamId: '81384788765712384',
      notifyChannelId: '1',
    });
    expect(body.notifyOn).toBe('always');
  });

  it('creates an agent-scoped trigger without a workflow name', async () => {
    const body = await create({ name: 'any', agentId: agent.agentId, scopeType: 'agent', responseMode: 'async' });
    expect(body).toMatchObject({ scopeType: 'agent', workflowName: null });
  });

  it('creates a cron trigger with a normalized expression, UTC and enabled by default', async () => {
    const body = await create({ ...webhook(), type: 'cron', cronExpression: '0  3 * * MON-FRI' });
    expect(body).toMatchObject({
      type: 'cron',
      cronExpression: '0 3 * * MON-FRI',
      cronTimezone: 'UTC',
      cronEnabled: true,
    });
    const zoned = await create({
      ...webhook(),
      type: 'cron',
      cronExpression: '*/15 * * * *',
      cronTimezone: 'europe/berlin',
      cronEnabled: false,
    });
    expect(zoned).toMatchObject({ cronTimezone: 'Europe/Berlin', cronEnabled: false });
  });

  it('creates slack and discord chat triggers and refuses a second one on the same keyword and channel', async () => {
    for (const type of ['slack', 'discord']) {
      const chat = { ...webhook(), type, chatTeamId: 'T1', chatChannelId: 'C1', chatKeyword: 'ship' };
      const body = await create(chat);
      expect(body).toMatchObject({
        type,
        chatTeamId: 'T1',
        chatChannelId: 'C1',
        chatKeyword: 'ship',
        chatAllowedUserIds: null,
        cronEnabled: null,
      });
      const limited = await t.owner.patch(`${path}/${body.id}`, { body: { chatAllowedUserIds: ['U0ADA', '1234'] } });
      expect(limited.status, limited.text).toBe(200);
      expect(limited.body.chatAllowedUserIds).toEqual(['U0ADA', '1234']);
      expect((await t.owner.get(`${path}/${body.id}`)).body.chatAllowedUserIds).toEqual(['U0ADA', '1234']);
      const again = await t.owner.post(path, { body: { ...chat, chatKeyword: 'SHIP' } });
      expect(again.status).toBe(409);
      expect(again.body).toMatchObject({ statusCode: 409, code: 'conflict' });
    }
  });

  it('refuses each invalid field with 422 naming it', async () => {
    const cron = { ...webhook(), type: 'cron' };
    const chat = { ...webhook(), type: 'slack', chatTeamId: 'T', chatChannelId: 'C', chatKeyword: 'k' };
    const cases: [string, Record<string, unknown>][] = [
      ['name', { ...webhook(), name: '' }],
      ['name', { ...webhook(), name: '   ' }],
      ['name', { ...webhook(), name: 'x'.repeat(256) }],
      ['agentId', { ...webhook(), agentId: 'not-a-uuid' }],
      ['agentId', { ...webhook(), agentId: UNKNOWN_ID }],
      ['scopeType', { ...webhook(), scopeType: 'org' }],
      ['workflowName', { ...webhook(), workflowName: undefined }],
      ['workflowName', { ...webhook(), workflowName: null }],
      ['workflowName', { ...webhook(), workflowName: '' }],
      ['workflowName', { ...webhook(), workflowName: '-starts-with-dash' }],
      ['workflowName', { ...webhook(), workflowName: 'has space' }],
      ['workflowName', { ...webhook(), workflowName: 'w'.repeat(129) }],
      ['workflowName', { ...webhook(), scopeType: 'agent' }],
      ['responseMode', { ...webhook(), responseMode: 'later' }],
      ['responseTimeoutMs', { ...webhook(), responseTimeoutMs: 999 }],
      ['responseTimeoutMs', { ...webhook(), responseTimeoutMs: 600001 }],
      ['responseTimeoutMs', { ...webhook(), responseTimeoutMs: 1500.5 }],
      ['responseTimeoutMs', { ...webhook(), responseTimeoutMs: '30000' }],
      ['allowedRefs', { ...webhook(), allowedRefs: [] }],
      ['allowedRefs', { ...webhook(), allowedRefs: ['main', 'main'] }],
      ['allowedRefs', { ...webhook(), allowedRefs: Array.from({ length: 101 }, (_, i) => `r${i}`) }],
      ['allowedRefs', { ...webhook(), allowedRefs: 'main' }],
      ['allowedRefs.0', { ...webhook(), allowedRefs: [''] }],
      ['allowedRefs.0', { ...webhook(), allowedRefs: ['r'.repeat(256)] }],
      ['allowedRefs.1', { ...webhook(), allowedRefs: ['main', 7] }],
      ['allowDebug', { ...webhook(), allowDebug: 'yes' }],
      ['notifyProvider', { ...webhook(), notifyProvider: 'teams' }],
      ['notifyTeamId', { ...webhook(), notifyProvider: 'slack', notifyChannelId: 'C' }],
      ['notifyChannelId', { ...webhook(), notifyProvider: 'slack', notifyTeamId: 'T' }],
      ['notifyTeamId', { ...webhook(), notifyTeamId: 'T' }],
      ['notifyChannelId', { ...webhook(), notifyChannelId: 'C' }],
      ['notifyChannelId', { ...webhook(), notifyProvider: 'slack', notifyTeamId: 'T', notifyChannelId: 'has space' }],
      ['notifyOn', { ...webhook(), notifyOn: 'always' }],
      [
        'notifyOn',
        { ...webhook(), notifyProvider: 'slack', notifyTeamId: 'T', notifyChannelId: 'C', notifyOn: 'sometimes' },
      ],
      ['type', { ...webhook(), type: 'email' }],
      ['type', { ...webhook(), type: null }],
      ['cronExpression', cron],
      ['cronExpression', { ...cron, cronExpression: '61 * * * *' }],
      ['cronExpression', { ...cron, cronExpression: '* * * * * *' }],
      ['cronExpression', { ...cron, cronExpression: '@daily' }],
      ['cronExpression', { ...cron, cronExpression: '0 0 31 2 *' }],
      ['cronExpression', { ...cron, cronExpression: 'x'.repeat(257) }],
      ['cronTimezone', { ...cron, cronExpression: '* * * * *', cronTimezone: 'Mars/Olympus' }],
      ['cronTimezone', { ...cron, cronExpression: '* * * * *', cronTimezone: '+02:00' }],
      ['cronEnabled', { ...cron, cronExpression: '* * * * *', cronEnabled: 'true' }],
      ['cronExpression', { ...webhook(), cronExpression: '* * * * *' }],
      ['cronTimezone', { ...webhook(), cronTimezone: 'UTC' }],
      ['cronEnabled', { ...webhook(), cronEnabled: true }],
      ['chatTeamId', { ...chat, chatTeamId: undefined }],
      ['chatChannelId', { ...chat, chatChannelId: null }],
      ['chatKeyword', { ...chat, chatKeyword: undefined }],
      ['chatKeyword', { ...chat, chatKeyword: 'two words' }],
      ['chatKeyword', { ...chat, chatKeyword: 'k'.repeat(65) }],
      ['chatKeyword', { ...chat, chatKeyword: '' }],
      ['cronExpression', { ...chat, cronExpression: '* * * * *' }],
      ['chatKeyword', { ...webhook(), chatKeyword: 'deploy' }],
      ['chatAllowedUserIds', { ...chat, chatAllowedUserIds: [] }],
      ['chatAllowedUserIds', { ...chat, chatAllowedUserIds: ['U0ADA', 'U0ADA'] }],
      ['chatAllowedUserIds.0', { ...chat, chatAllowedUserIds: ['<@U0ADA>'] }],
      ['chatAllowedUserIds', { ...chat, chatAllowedUserIds: 'U0ADA' }],
      ['chatAllowedUserIds', { ...webhook(), chatAllowedUserIds: ['U0ADA'] }],
      ['chatTeamId', { ...cron, cronExpression: '* * * * *', chatTeamId: 'T' }],
      ['unexpected', { ...webhook(), unexpected: true }],
      ['tokenHash', { ...webhook(), tokenHash: 'abc' }],
    ];
    for (const [field, body] of cases) {
      const res = await t.owner.post(path, { body });
      expect422(res, field);
    }
  });

  it('refuses missing required fields, wrong bodies and malformed JSON with 4xx, never 500', async () => {
    for (const field of ['name', 'agentId', 'scopeType', 'responseMode']) {
      const body: Record<string, unknown> = webhook();
      delete body[field];
      expect422(await t.owner.post(path, { body }), field);
    }
    for (const body of [[], 'text', 42, null]) {
      const res = await t.owner.post(path, { body });
      expect(res.status, JSON.stringify(body)).toBe(422);
      expect(res.body.code).toBe('validation_failed');
    }
    for (const rawBody of ['{"name":', '', '{"name": "x"'.repeat(10000)]) {
      const res = await t.owner.post(path, { rawBody, headers: { 'content-type': 'application/json' } });
      expect(res.status).toBeGreaterThanOrEqual(400);
      expect(res.status).toBeLessThan(500);
      expect(res.body).toMatchObject({ statusCode: res.status, code: expect.any(String), message: expect.any(String) });
    }
    const huge = await t.owner.post(path, { body: { ...webhook(), name: 'x'.repeat(2_000_000) } });
    expect([413, 422]).toContain(huge.status);
    const text = await t.owner.post(path, { rawBody: 'name=x', headers: { 'content-type': 'text/plain' } });
    expect(text.status).toBe(422);
    const query = await t.owner.get(`${path}?limit=5&color=red`);
    expect(query.status).toBe(422);
  });

  it('refuses an agent of another organization and a revoked agent, naming agentId', async () => {
    expect422(await t.owner.post(path, { body: { ...webhook(), agentId: other.agent.agentId } }), 'agentId');
    const doomed = await enrollTestAgent(t.owner, t.orgId);
    await t.coordinator.ctx.repos.agents.revoke(t.orgId, doomed.agentId, new Date().toISOString());
    const res = await t.owner.post(path, { body: { ...webhook(), agentId: doomed.agentId } });
    expect422(res, 'agentId');
    expect(res.body.message).toMatch(/revoked/);
  });

  it('updates any subset and re-validates the merged trigger', async () => {
    const created = await create({ ...webhook(), name: 'patchable' });
    const renamed = await t.owner.patch(`${path}/${created.id}`, { body: { name: 'renamed', allowedRefs: ['main'] } });
    expect(renamed.status).toBe(200);
    expect(renamed.body).toEqual({ ...created, name: 'renamed', allowedRefs: ['main'], updatedAt: expect.any(String) });
    expect(Date.parse(renamed.body.updatedAt)).toBeGreaterThanOrEqual(Date.parse(created.updatedAt));
    expect((await t.owner.get(`${path}/${created.id}`)).body).toEqual(renamed.body);
    const [entry] = await auditOf('trigger.update');
    expect(entry).toMatchObject({ targetId: created.id, metadata: { changed: ['name', 'allowedRefs'] } });

    // The merged whole must hold: a cron kind needs its expression.
    expect422(await t.owner.patch(`${path}/${created.id}`, { body: { type: 'cron' } }), 'cronExpression');
    expect422(
      await t.owner.patch(`${path}/${created.id}`, { body: { scopeType: 'agent', workflowName: 'x' } }),
      'workflowName',
    );
    expect422(await t.owner.patch(`${path}/${created.id}`, { body: { chatKeyword: 'k' } }), 'chatKeyword');
    expect422(await t.owner.patch(`${path}/${created.id}`, { body: { agentId: other.agent.agentId } }), 'agentId');
    expect422(await t.owner.patch(`${path}/${created.id}`, { body: { responseTimeoutMs: 0 } }), 'responseTimeoutMs');
    expect422(await t.owner.patch(`${path}/${created.id}`, { body: { unknown: 1 } }), 'unknown');
    expect422(await t.owner.patch(`${path}/${created.id}`, { body: { name: null } }), 'name');
    expect((await t.owner.get(`${path}/${created.id}`)).body).toEqual(renamed.body);
  });

  it('sends its version as ETag, and refuses with 412 a change made from an older one, changing nothing', async () => {
    const created = await t.owner.post(path, { body: { ...webhook(), name: 'versioned' } });
    const url = `${path}/${created.body.id}`;
    expect(created.headers.get('etag')).toBe(`"${created.body.updatedAt}"`);
    const read = await t.owner.get(url);
    expect(read.headers.get('etag')).toBe(`"${read.body.updatedAt}"`);

    // Two tabs opened on the same version: the first change goes in, the second is refused.
    const first = await t.owner.patch(url, {
      body: { name: 'first' },
      headers: { 'if-match': read.headers.get('etag')! },
    });
    expect(first.status, first.text).toBe(200);
    expect(first.headers.get('etag')).toBe(`"${first.body.updatedAt}"`);
    expect(first.headers.get('etag')).not.toBe(read.headers.get('etag'));
    const second = await t.owner.patch(url, {
      body: { allowDebug: true },
      headers: { 'if-match': read.headers.get('etag')! },
    });
    expect(second.status, second.text).toBe(412);
    expect(second.body).toMatchObject({
      code: 'precondition_failed',
      message: expect.stringContaining(first.body.updatedAt),
      details: { updatedAt: first.body.updatedAt },
    });
    expect((await t.owner.get(url)).body).toEqual(first.body);
    // Read again, the change goes in; `*` and no If-Match take the trigger as it is.
    const again = await t.owner.patch(url, {
      body: { allowDebug: true },
      headers: { 'if-match': first.headers.get('etag')! },
    });
    expect(again.status, again.text).toBe(200);
    expect((await t.owner.patch(url, { body: { name: 'any' }, headers: { 'if-match': '*' } })).status).toBe(200);
    // A tag that is not one strong entity tag is refused before anything is read.
    for (const tag of ['W/"x"', 'unquoted', '"a", "b"']) {
      const res = await t.owner.patch(url, { body: { name: 'x' }, headers: { 'if-match': tag } });
      expect(res.status, tag).toBe(400);
      expect(res.body).toMatchObject({ code: 'bad_request', message: expect.stringContaining('If-Match') });
    }
    expect((await t.owner.get(url)).body.name).toBe('any');
  });

  // On PostgreSQL (this file's pass there) the changes' reads and writes interleave: without the
  // version check, some put back fields another had just changed. One coordinator on SQLite reads
  // and writes each change without letting another in between (coordinator/test/db/contract
  // proves the check on both databases).
  it('keeps every field of changes made at the same time without If-Match', async () => {
    const created = await create({ ...webhook(), name: 'busy' });
    const url = `${path}/${created.id}`;
    const changes: Record<string, unknown>[] = [
      { name: 'busy-renamed' },
      { allowDebug: true },
      { allowedRefs: ['main'] },
      { responseTimeoutMs: 12_345 },
      { responseMode: 'sync' },
    ];
    const answers = await Promise.all(changes.map((body) => t.owner.patch(url, { body })));
    expect(answers.map((a) => a.status)).toEqual(changes.map(() => 200));
    expect((await t.owner.get(url)).body).toMatchObject(Object.assign({}, ...changes));
  });

  it('clears the fields of the old kind when an update changes the kind', async () => {
    const cron = await create({ ...webhook(), type: 'cron', cronExpression: '0 3 * * *', cronTimezone: 'Asia/Tokyo' });
    const chat = await t.owner.patch(`${path}/${cron.id}`, {
      body: { type: 'discord', chatTeamId: 'G', chatChannelId: 'C', chatKeyword: 'go' },
    });
    expect(chat.status).toBe(200);
    expect(chat.body).toMatchObject({
      type: 'discord',
      cronExpression: null,
      cronTimezone: null,
      cronEnabled: null,
      chatKeyword: 'go',
    });
    const agentScoped = await t.owner.patch(`${path}/${cron.id}`, { body: { type: 'webhook', scopeType: 'agent' } });
    expect(agentScoped.status).toBe(200);
    expect(agentScoped.body).toMatchObject({
      type: 'webhook',
      scopeType: 'agent',
      workflowName: null,
      chatKeyword: null,
      chatAllowedUserIds: null,
      chatTeamId: null,
    });
  });

  it('answers an empty update with the unchanged trigger', async () => {
    const created = await create({ ...webhook(), name: 'unchanged' });
    const res = await t.owner.patch(`${path}/${created.id}`, { body: {} });
    expect(res.status).toBe(200);
    expect(res.body).toEqual(created);
  });

  it('lets members list, read, create and update triggers but not delete them', async () => {
    const created = await create({ ...webhook(), name: 'by member' }, member);
    expect((await member.get(path)).body.map((x: { id: string }) => x.id)).toContain(created.id);
    expect((await member.get(`${path}/${created.id}`)).status).toBe(200);
    expect((await member.patch(`${path}/${created.id}`, { body: { allowDebug: true } })).body.allowDebug).toBe(true);
    const del = await member.delete(`${path}/${created.id}`);
    expect(del.status).toBe(403);
    expect(del.body.code).toBe('forbidden');
    expect((await t.owner.get(`${path}/${created.id}`)).status).toBe(200);
  });

  it('deletes a trigger for good: 200 with the trigger as it was, then 404 everywhere', async () => {
    const created = await create({ ...webhook(), name: 'doomed' });
    const res = await t.owner.delete(`${path}/${created.id}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual(created);
    expect((await t.owner.get(`${path}/${created.id}`)).status).toBe(404);
    expect((await t.owner.patch(`${path}/${created.id}`, { body: { name: 'x' } })).status).toBe(404);
    expect((await t.owner.delete(`${path}/${created.id}`)).status).toBe(404);
    expect((await t.owner.get(path)).body.map((x: { id: string }) => x.id)).not.toContain(created.id);
    const [entry] = await auditOf('trigger.delete');
    expect(entry).toMatchObject({ targetId: created.id, metadata: { name: 'doomed' } });
  });

  it("keeps organizations apart: another org's trigger is 404 and non-members get 404", async () => {
    const foreign = await other.client.post(`/orgs/${other.orgId}/triggers`, {
      body: { ...webhook(), agentId: other.agent.agentId },
    });
    expect(foreign.status).toBe(201);
    for (const res of [
      await t.owner.get(`${path}/${foreign.body.id}`),
      await t.owner.patch(`${path}/${foreign.body.id}`, { body: { name: 'stolen' } }),
      await t.owner.delete(`${path}/${foreign.body.id}`),
      await other.client.get(path),
      await other.client.post(path, { body: webhook() }),
      await other.client.get(`${path}/${foreign.body.id}`),
    ]) {
      expect(res.status).toBe(404);
      expect(res.body.code).toBe('not_found');
    }
    expect((await t.owner.get(path)).body.map((x: { id: string }) => x.id)).not.toContain(foreign.body.id);
    expect((await other.client.get(`/orgs/${other.orgId}/triggers/${foreign.body.id}`)).body.name).toBe('deploy');
  });

  it('lists triggers a page at a time, oldest first, narrowed by type, name and ids, with how many match', async () => {
    const all = await t.owner.get(path);
    expect(all.status, all.text).toBe(200);
    const ids: string[] = all.body.map((tr: { id: string }) => tr.id);
    expect(ids.length).toBeGreaterThan(4);
    expect(all.headers.get('x-total-count')).toBe(String(ids.length));
    expect(all.headers.get('x-next-cursor')).toBeNull();

    // Pages of 2 walk the whole list once, in order, the count on every page.
    const walked: string[] = [];
    let cursor: string | null = null;
    do {
      const query: string = `limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
      const page = await t.owner.get(`${path}?${query}`);
      expect(page.status, page.text).toBe(200);
      expect(page.body.length).toBeLessThanOrEqual(2);
      expect(page.headers.get('x-total-count')).toBe(String(ids.length));
      walked.push(...page.body.map((tr: { id: string }) => tr.id));
      cursor = page.headers.get('x-next-cursor');
    } while (cursor !== null);
    expect(walked).toEqual(ids);

    // A page's triggers are the full views, the same as the whole list's.
    const second = await t.owner.get(
      `${path}?limit=1&cursor=${encodeURIComponent(
        (await t.owner.get(`${path}?limit=1`)).headers.get('x-next-cursor')!,
      )}`,
    );
    expect(second.body).toEqual([all.body[1]]);

    const crons = await t.owner.get(`${path}?type=cron`);
    expect(crons.body.length).toBeGreaterThan(0);
    expect(crons.body.every((tr: { type: string }) => tr.type === 'cron')).toBe(true);
    expect(crons.body.map((tr: { id: string }) => tr.id)).toEqual(
      all.body.filter((tr: { type: string }) => tr.type === 'cron').map((tr: { id: string }) => tr.id),
    );

    const named = all.body[0] as { id: string; name: string };
    const byName = await t.owner.get(`${path}?q=${encodeURIComponent(named.name.toUpperCase())}`);
    expect(byName.body.map((tr: { id: string }) => tr.id)).toContain(named.id);
    expect(byName.body.every((tr: { name: string }) => tr.name.toLowerCase().includes(named.name.toLowerCase()))).toBe(
      true,
    );

    // By id: only those (an unknown id names nothing), in the list's order, whatever order asked.
    const byIds = await t.owner.get(`${path}?id=${ids[2]}&id=${UNKNOWN_ID}&id=${ids[0]!.toUpperCase()}`);
    expect(byIds.status, byIds.text).toBe(200);
    expect(byIds.body.map((tr: { id: string }) => tr.id)).toEqual([ids[0], ids[2]]);
    expect(byIds.headers.get('x-total-count')).toBe('2');
    // Another organization's trigger is not named.
    const foreign = await other.client.get(`/orgs/${other.orgId}/triggers?id=${ids[0]}`);
    expect(foreign.status, foreign.text).toBe(200);
    expect(foreign.body).toEqual([]);

    for (const [query, field] of [
      ['limit=0', 'limit'],
      ['limit=501', 'limit'],
      ['type=email', 'type'],
      ['q=', 'q'],
      ['cursor=nope', 'cursor'],
      ['id=not-a-uuid', 'id'],
      ['unknown=1', 'unknown'],
    ] as const) {
      const res = await t.owner.get(`${path}?${query}`);
      expect(res.status, `${query}: ${res.text}`).toBe(422);
      expect(JSON.stringify(res.body.details), query).toContain(field);
    }
    const tooMany = Array.from({ length: 201 }, () => `id=${UNKNOWN_ID}`).join('&');
    expect((await t.owner.get(`${path}?${tooMany}`)).status).toBe(422);
  });

  it('answers 404 for an unknown trigger and for a malformed id', async () => {
    expect((await t.owner.get(`${path}/${UNKNOWN_ID}`)).status).toBe(404);
    expect((await t.owner.get(`${path}/not-a-uuid`)).status).toBe(404);
    expect((await t.owner.get(`/orgs/not-a-uuid/triggers`)).status).toBe(404);
  });

  it('refuses bad occurrence queries with 422 naming the field, and unknown or foreign triggers with 404', async () => {
    const cron = await create({
      ...webhook(),
      name: 'nightly',
      type: 'cron',
      cronExpression: '0 3 * * *',
    });
    const occurrences = `${path}/${cron.id}/occurrences`;
    const ok = await t.owner.get(occurrences);
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body).toEqual([]);
    for (const [query, field] of [
      ['limit=0', 'querystring.limit'],
      ['limit=100000', 'querystring.limit'],
      ['limit=ten', 'querystring.limit'],
      ['cursor=yesterday', 'querystring.cursor'],
      ['colour=red', 'querystring'],
    ]) {
      const res = await t.owner.get(`${occurrences}?${query}`);
      expect(res.status, `${query}: ${res.text}`).toBe(422);
      expect(res.body.code).toBe('validation_failed');
      expect(res.body.details.map((d: { path: string }) => d.path).join(' '), query).toContain(field);
    }
    const unknown = await t.owner.get(`${path}/00000000-0000-4000-8000-000000000000/occurrences`);
    expect(unknown.status).toBe(404);
    expect((await other.client.get(occurrences)).status).toBe(404);
    expect((await t.api.get(occurrences)).status).toBe(401);
  });

  it('still shows a cron trigger whose stored schedule does not parse, with no next run, and lets it be fixed', async () => {
    const cron = await create({ ...webhook(), name: 'damaged', type: 'cron', cronExpression: '0 3 * * *' });
    const overview = `/orgs/${t.orgId}/overview`;
    // Only a damaged or hand-edited database holds such values (or one a newer parser refuses).
    for (const set of ["cron_expression = 'every minute'", "cron_timezone = 'Mars/Olympus'"]) {
      await t.sql.run(`UPDATE triggers SET cron_expression = '0 3 * * *', cron_timezone = 'UTC' WHERE id = ?`, cron.id);
      await t.sql.run(`UPDATE triggers SET ${set} WHERE id = ?`, cron.id);
      const one = await t.owner.get(`${path}/${cron.id}`);
      expect(one.status, `${set}: ${one.text}`).toBe(200);
      expect(one.body).toMatchObject({ id: cron.id, cronEnabled: true, nextRunAt: null, nextRuns: [] });
      const list = await t.owner.get(path);
      expect(list.status, `${set}: ${list.text}`).toBe(200);
      expect(list.body.find((x: { id: string }) => x.id === cron.id)).toMatchObject({ nextRunAt: null });
      const home = await t.owner.get(overview);
      expect(home.status, `${set}: ${home.text}`).toBe(200);
      expect(home.body.nextCronRuns.map((r: { triggerId: string }) => r.triggerId)).not.toContain(cron.id);
    }
    const fixed = await t.owner.patch(`${path}/${cron.id}`, {
      body: { cronExpression: '0 4 * * *', cronTimezone: 'UTC' },
    });
    expect(fixed.status, fixed.text).toBe(200);
    expect(fixed.body.nextRunAt).toMatch(/T04:00:00\.000Z$/);
  });

  it('refuses calls without a session with 401', async () => {
    expect((await t.api.get(path)).status).toBe(401);
    expect((await t.api.post(path, { body: webhook() })).status).toBe(401);
    expect((await t.api.get(path, { token: 'drv_notasession' })).status).toBe(401);
  });
});

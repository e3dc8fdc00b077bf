import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import { addUser } from '../helpers/members.js';
import type { ApiClient } from '../helpers/http.js';
import { issueApiToken } from '../helpers/tokens.js';

interface Entry {
  id: number;
  action: string;
  actorType: string;
  actorId: string | null;
  targetType: string | null;
  targetId: string | null;
  metadata: Record<string, unknown>;
  createdAt: string;
}
const ENTRY_FIELDS = ['action', 'actorId', 'actorType', 'createdAt', 'id', 'metadata', 'targetId', 'targetType'];

describe('audit log', () => {
  let t: TestCoordinator;
  let member: ApiClient;
  let ownerId: string;
  beforeAll(async () => {
    t = await startTestCoordinator();
    member = (await addUser(t.owner, t.orgId, 'member@example.test')).client;
    ownerId = (await t.owner.get(`/orgs/${t.orgId}/members`)).body.find(
      (m: { role: string }) => m.role === 'owner',
    ).userId;
    // The member's invitation and its acceptance, 12 enrollment tokens and 3 bindings: 17 entries.
    for (let i = 0; i < 12; i++) await t.owner.post(`/orgs/${t.orgId}/enrollment-tokens`, { body: { name: `t${i}` } });
    for (let i = 0; i < 3; i++)
      await t.owner.post(`/orgs/${t.orgId}/storage-bindings`, { body: { name: `b${i}`, backend: 'local' } });
  });
  afterAll(() => t?.close());

  it('lists entries newest first with the documented fields', async () => {
    const res = await t.owner.get<Entry[]>(`/orgs/${t.orgId}/audit`);
    expect(res.status).toBe(200);
    expect(res.body).toHaveLength(17);
    expect(res.headers.get('x-next-cursor')).toBeNull();
    const ids = res.body.map((e) => e.id);
    expect(ids).toEqual([...ids].sort((a, b) => b - a));
    for (const e of res.body) expect(Object.keys(e).sort()).toEqual(ENTRY_FIELDS);
    expect(res.body[0]).toMatchObject({
      action: 'storage_binding.create',
      actorType: 'user',
      actorId: ownerId,
      metadata: { name: 'b2' },
    });
    expect(res.body.at(-1)).toMatchObject({
      action: 'invitation.create',
      targetType: 'invitation',
      metadata: { email: 'member@example.test', role: 'member' },
    });
    expect(res.body.at(-2)).toMatchObject({
      action: 'invitation.accept',
      actorType: 'user',
      targetType: 'user',
      metadata: { email: 'member@example.test', role: 'member', invitationId: res.body.at(-1)!.targetId },
    });
  });

  it('filters by action', async () => {
    const res = await t.owner.get<Entry[]>(`/orgs/${t.orgId}/audit?action=storage_binding.create`);
    expect(res.body.map((e) => e.metadata.name)).toEqual(['b2', 'b1', 'b0']);
    expect((await t.owner.get(`/orgs/${t.orgId}/audit?action=nothing.like.this`)).body).toEqual([]);
  });

  it('pages with limit and the x-next-cursor header, covering every entry exactly once', async () => {
    const all = (await t.owner.get<Entry[]>(`/orgs/${t.orgId}/audit?limit=200`)).body.map((e) => e.id);
    const seen: number[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const query: string = cursor === null ? 'limit=5' : `limit=5&cursor=${encodeURIComponent(cursor)}`;
      const res = await t.owner.get<Entry[]>(`/orgs/${t.orgId}/audit?${query}`);
      expect(res.status).toBe(200);
      expect(res.body.length).toBeLessThanOrEqual(5);
      seen.push(...res.body.map((e) => e.id));
      cursor = res.headers.get('x-next-cursor');
      pages++;
    } while (cursor !== null && pages < 10);
    expect(pages).toBe(4);
    expect(seen).toEqual(all);
  });

  it('pages within a filter', async () => {
    const first = await t.owner.get<Entry[]>(`/orgs/${t.orgId}/audit?action=enrollment_token.create&limit=10`);
    expect(first.body).toHaveLength(10);
    const cursor = first.headers.get('x-next-cursor');
    expect(cursor).not.toBeNull();
    const second = await t.owner.get<Entry[]>(
      `/orgs/${t.orgId}/audit?action=enrollment_token.create&limit=10&cursor=${cursor}`,
    );
    expect(second.body.map((e) => e.metadata.name)).toEqual(['t1', 't0']);
    expect(second.headers.get('x-next-cursor')).toBeNull();
  });

  it('is for owners only', async () => {
    const res = await member.get(`/orgs/${t.orgId}/audit`);
    expect(res.status).toBe(403);
    expect(res.body.code).toBe('forbidden');
  });

  it('refuses bad query parameters with 422', async () => {
    for (const query of [
      'limit=0',
      'limit=201',
      'limit=abc',
      'limit=1.5',
      'cursor=abc',
      'cursor=0',
      'cursor=-5',
      'cursor=99999999999999999',
      `cursor=${'9'.repeat(40)}`,
      `action=${'a'.repeat(101)}`,
      'action=',
      'actor=me',
    ]) {
      const res = await t.owner.get(`/orgs/${t.orgId}/audit?${query}`);
      expect(res.status, query).toBe(422);
      expect(res.body.code).toBe('validation_failed');
    }
  });

  it('shows only the entries of its own organization', async () => {
    const other = await t.owner.post('/orgs', { body: { name: 'other' } });
    const res = await t.owner.get<Entry[]>(`/orgs/${other.body.id}/audit`);
    expect(res.body.map((e) => e.action)).toEqual(['org.create']);
  });
});

describe('audit log filters', () => {
  let t: TestCoordinator;
  let all: Entry[];
  let memberId: string;
  let tokenId: string;
  const list = async (query: string) => {
    const res = await t.owner.get<Entry[]>(`/orgs/${t.orgId}/audit?limit=200&${query}`);
    expect(res.status, res.text).toBe(200);
    return res.body;
  };
  const ids = (entries: Entry[]) => entries.map((e) => e.id);

  beforeAll(async () => {
    t = await startTestCoordinator();
    memberId = (await addUser(t.owner, t.orgId, 'filtered@example.test')).userId;
    await t.owner.patch(`/orgs/${t.orgId}/members/${memberId}`, { body: { role: 'owner' } });
    await t.owner.patch(`/orgs/${t.orgId}/members/${memberId}`, { body: { role: 'member' } });
    const token = await issueApiToken(t.owner, t.orgId, [], { name: 'reader' });
    tokenId = token.id;
    // A discovery read by the token: an entry whose actor is the token.
    expect((await t.api.get('/agents', { token: token.token })).status).toBe(200);
    for (let i = 0; i < 3; i++) await t.owner.post(`/orgs/${t.orgId}/enrollment-tokens`, { body: { name: `e${i}` } });
    all = await list('');
  });
  afterAll(() => t?.close());

  it('filters by actor type and actor', async () => {
    const byToken = await list('actorType=api_token');
    expect(byToken.map((e) => [e.action, e.actorId])).toEqual([['api_token.discover', tokenId]]);
    expect(ids(await list(`actorId=${tokenId}`))).toEqual(ids(byToken));
    expect(ids(await list('actorType=user'))).toEqual(ids(all.filter((e) => e.actorType === 'user')));
    expect(await list('actorType=agent')).toEqual([]);
  });

  it('filters by target type and target id, alone and together with the action', async () => {
    const aboutMember = await list(`targetId=${memberId}`);
    expect(aboutMember.map((e) => e.action)).toEqual(['member.update', 'member.update', 'invitation.accept']);
    expect(ids(await list(`targetType=user&targetId=${memberId}`))).toEqual(ids(aboutMember));
    expect(ids(await list(`targetId=${memberId}&action=invitation.accept`))).toEqual([aboutMember[2]!.id]);
    expect(await list(`targetType=api_token&targetId=${memberId}`)).toEqual([]);
    const tokens = await list('targetType=enrollment_token');
    expect(tokens.map((e) => e.metadata.name)).toEqual(['e2', 'e1', 'e0']);
  });

  it('filters by a creation time range: from inclusive, before exclusive, with any offset', async () => {
    const oldestFirst = [...all].reverse();
    const from = oldestFirst[2]!.createdAt;
    const until = oldestFirst.at(-2)!.createdAt;
    const expected = all.filter((e) => e.createdAt >= from && e.createdAt < until);
    expect(expected.length).toBeGreaterThan(0);
    expect(ids(await list(`createdAfter=${from}&createdBefore=${until}`))).toEqual(ids(expected));
    expect(ids(await list(`createdAfter=${from}`))).toEqual(ids(all.filter((e) => e.createdAt >= from)));
    // The same instant written with another offset.
    const shifted = new Date(new Date(from).getTime() + 2 * 3600_000).toISOString().replace('Z', '+02:00');
    expect(ids(await list(`createdAfter=${encodeURIComponent(shifted)}`))).toEqual(
      ids(all.filter((e) => e.createdAt >= from)),
    );
  });

  it('takes a bound past the years a time is stored in at the nearest stored instant, alike on both databases', async () => {
    const from = [...all].reverse()[2]!.createdAt;
    // An offset moves the last second of 9999 into the year 10000 (`+010000-...`), and the first
    // hour of the year 0000 into -000001; the year 0000 itself is none of PostgreSQL's.
    const past9999 = encodeURIComponent('9999-12-31T23:59:59-01:00');
    const before1 = encodeURIComponent('0000-01-01T00:00:00+01:00');
    const year0 = '0000-06-01T00:00:00Z';
    expect(ids(await list(`createdBefore=${past9999}`))).toEqual(ids(all));
    expect(ids(await list(`createdAfter=${before1}`))).toEqual(ids(all));
    expect(ids(await list(`createdAfter=${year0}`))).toEqual(ids(all));
    expect(ids(await list(`createdAfter=${from}&createdBefore=${past9999}`))).toEqual(
      ids(all.filter((e) => e.createdAt >= from)),
    );
    expect(await list(`createdAfter=${past9999}`)).toEqual([]);
    expect(await list(`createdBefore=${year0}`)).toEqual([]);
    expect(await list(`createdBefore=${before1}`)).toEqual([]);
  });

  it('pages by cursor within the filters', async () => {
    const users = all.filter((e) => e.actorType === 'user');
    const first = await t.owner.get<Entry[]>(`/orgs/${t.orgId}/audit?actorType=user&limit=2`);
    const cursor = first.headers.get('x-next-cursor');
    expect(ids(first.body)).toEqual(ids(users.slice(0, 2)));
    const second = await t.owner.get<Entry[]>(`/orgs/${t.orgId}/audit?actorType=user&limit=200&cursor=${cursor}`);
    expect(ids(second.body)).toEqual(ids(users.slice(2)));
  });

  it('refuses bad filters with 422, naming the field', async () => {
    for (const [query, field] of [
      ['actorType=robot', 'querystring.actorType'],
      ['actorId=', 'querystring.actorId'],
      [`targetType=${'t'.repeat(101)}`, 'querystring.targetType'],
      ['targetId=', 'querystring.targetId'],
      ['createdAfter=yesterday', 'querystring.createdAfter'],
      ['createdBefore=2026-13-01T00:00:00Z', 'querystring.createdBefore'],
      ['createdAfter=2026-02-01T00:00:00Z&createdBefore=2026-01-01T00:00:00Z', 'querystring.createdBefore'],
    ]) {
      const res = await t.owner.get(`/orgs/${t.orgId}/audit?${query}`);
      expect(res.status, query).toBe(422);
      expect(res.body.code).toBe('validation_failed');
      expect(JSON.stringify(res.body.details), query).toContain(field!);
    }
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import { addUser } from '../helpers/members.js';
import type { ApiClient } from '../helpers/http.js';

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
    // 12 enrollment tokens and 3 bindings: 16 entries with the member.add.
    for (let i = 0; i < 12; i++) await t.owner.post(`/orgs/${t.orgId}/enrollment-tokens`, { body: { name: `t${i}` } });
    for (let i = 0; i < 3; i++)
      await t.owner.post(`/orgs/${t.orgId}/storage-bindings`, { body: { name: `b${i}`, backend: 'local' } });
  });
  afterAll(() => t?.close());

  it('lists entries newest first with the documented fields', async () => {
    const res = await t.owner.get<Entry[]>(`/orgs/${t.orgId}/audit`);
    expect(res.status).toBe(200);
    expect(res.body).toHaveLength(16);
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
      action: 'member.add',
      targetType: 'user',
      metadata: { email: 'member@example.test' },
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

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import { enrollTestAgent, workflow } from '../helpers/agent.js';
import { addUser, outsider } from '../helpers/members.js';
import type { ApiClient } from '../helpers/http.js';

type Call = [method: 'GET' | 'POST' | 'PATCH' | 'DELETE', path: string, body?: unknown];

describe('management access control', () => {
  let t: TestCoordinator;
  let member: ApiClient;
  let memberId: string;
  let stranger: { client: ApiClient; orgId: string };
  let ids: { agent: string; workflow: string; binding: string; ownerId: string };

  /** Every management path of organization A this helper serves, with a valid body. */
  const calls = (): Call[] => {
    const o = `/orgs/${t.orgId}`;
    return [
      ['GET', o],
      ['GET', `${o}/members`],
      ['POST', `${o}/members`, { email: 'new@example.test', password: 'long enough pw', role: 'member' }],
      ['GET', `${o}/invitations`],
      ['PATCH', `${o}/members/${memberId}`, { role: 'owner' }],
      ['DELETE', `${o}/members/${memberId}`],
      ['POST', `${o}/enrollment-tokens`, {}],
      ['GET', `${o}/agents`],
      ['GET', `${o}/agents/${ids.agent}`],
      ['PATCH', `${o}/agents/${ids.agent}`, { name: 'renamed' }],
      ['DELETE', `${o}/agents/${ids.agent}`],
      ['GET', `${o}/workflows`],
      ['GET', `${o}/workflows/${ids.workflow}`],
      ['PATCH', `${o}/workflows/${ids.workflow}`, { rateLimitPerMinute: 1 }],
      ['GET', `${o}/storage-bindings`],
      ['POST', `${o}/storage-bindings`, { name: 'x', backend: 'local' }],
      ['GET', `${o}/storage-bindings/${ids.binding}`],
      ['DELETE', `${o}/storage-bindings/${ids.binding}`],
      ['GET', `${o}/audit`],
    ];
  };
  const OWNER_ONLY = new Set([
    'POST members',
    'GET invitations',
    'PATCH members',
    'DELETE members',
    'DELETE agents',
    'PATCH workflows',
    'POST storage-bindings',
    'DELETE storage-bindings',
    'GET audit',
  ]);
  const kind = ([method, path]: Call) => `${method} ${path.split('/')[3] ?? ''}`;
  const send = (client: ApiClient, [method, path, body]: Call) =>
    client.request(method, path, body === undefined ? {} : { body });

  beforeAll(async () => {
    t = await startTestCoordinator();
    ({ userId: memberId, client: member } = await addUser(t.owner, t.orgId, 'member@example.test'));
    stranger = await outsider(t.owner, t.orgId, 'stranger@example.test');
    const agent = await enrollTestAgent(t.owner, t.orgId);
    const put = await agent.putWorkflows([workflow('build')]);
    const extra = await t.owner.post(`/orgs/${t.orgId}/storage-bindings`, {
      body: { name: 'extra', backend: 'local' },
    });
    const members = await t.owner.get(`/orgs/${t.orgId}/members`);
    ids = {
      agent: agent.agentId,
      workflow: put.body.workflows[0].id,
      binding: extra.body.id,
      ownerId: members.body.find((m: { role: string }) => m.role === 'owner').userId,
    };
  });
  afterAll(() => t?.close());

  it('answers 404 to a user of another organization on every path of this one', async () => {
    expect((await stranger.client.get(`/orgs/${stranger.orgId}`)).body.role).toBe('owner');
    for (const call of calls()) {
      const res = await send(stranger.client, call);
      expect(res.status, `${call[0]} ${call[1]}`).toBe(404);
      expect(res.body).toMatchObject({ statusCode: 404, code: 'not_found', message: 'Organization not found' });
    }
    expect((await stranger.client.get('/orgs')).body.map((o: { id: string }) => o.id)).toEqual([stranger.orgId]);
  });

  it("answers 404 when another organization's ids are used under the caller's own organization", async () => {
    const o = `/orgs/${stranger.orgId}`;
    const crossed: Call[] = [
      ['GET', `${o}/agents/${ids.agent}`],
      ['PATCH', `${o}/agents/${ids.agent}`, { name: 'mine now' }],
      ['DELETE', `${o}/agents/${ids.agent}`],
      ['GET', `${o}/workflows/${ids.workflow}`],
      ['PATCH', `${o}/workflows/${ids.workflow}`, { rateLimitPerMinute: 1 }],
      ['GET', `${o}/storage-bindings/${ids.binding}`],
      ['DELETE', `${o}/storage-bindings/${ids.binding}`],
      ['PATCH', `${o}/members/${ids.ownerId}`, { role: 'member' }],
      ['DELETE', `${o}/members/${ids.ownerId}`],
    ];
    for (const call of crossed) {
      const res = await send(stranger.client, call);
      expect(res.status, `${call[0]} ${call[1]}`).toBe(404);
    }
    expect((await stranger.client.get(`${o}/agents`)).body).toEqual([]);
    expect((await stranger.client.get(`${o}/workflows`)).body).toEqual([]);
    expect((await t.owner.get(`/orgs/${t.orgId}/agents/${ids.agent}`)).body.status).not.toBe('revoked');
  });

  it('answers 403 to a member on every owner-only call and lets them make the others', async () => {
    for (const call of calls()) {
      if (call[0] === 'DELETE' && call[1].includes('/members/')) continue; // a member may not even remove themselves
      const res = await send(member, call);
      if (OWNER_ONLY.has(kind(call))) {
        expect(res.status, `${call[0]} ${call[1]}`).toBe(403);
        expect(res.body.code).toBe('forbidden');
      } else {
        expect(res.status, `${call[0]} ${call[1]}`).toBeLessThan(300);
      }
    }
    expect((await send(member, ['DELETE', `/orgs/${t.orgId}/members/${memberId}`])).status).toBe(403);
  });

  it('answers 401 without a session and never 500 to malformed ids or garbage bodies', async () => {
    for (const call of calls()) {
      expect((await send(t.api, call)).status, `${call[0]} ${call[1]}`).toBe(401);
    }
    for (const [method, path, body] of calls()) {
      const badPaths = [path.replace(t.orgId, 'not-a-uuid'), path.replace(/[0-9a-f-]{36}$/, '1234')].filter(
        (p) => p !== path,
      );
      for (const badPath of badPaths) {
        const res = await send(t.owner, [method, badPath, body]);
        expect(res.status, `${method} ${badPath}`).toBe(404);
        expect(res.body.code).toBe('not_found');
      }
      if (method === 'POST' || method === 'PATCH') {
        // An enrollment token takes no required field, so a JSON null is "no body" there.
        const nullIsEmpty = path.endsWith('/enrollment-tokens');
        for (const raw of [
          '{',
          '[]',
          '"x"',
          '17',
          ...(nullIsEmpty ? [] : ['null']),
          JSON.stringify({ deep: { deeper: ['x'.repeat(10_000)] } }),
        ]) {
          const res = await t.owner.request(method, path, {
            rawBody: raw,
            headers: { 'content-type': 'application/json' },
          });
          expect(res.status, `${method} ${path} ${raw.slice(0, 20)}`).toBeGreaterThanOrEqual(400);
          expect(res.status).toBeLessThan(500);
        }
        const text = await t.owner.request(method, path, {
          rawBody: 'name=x',
          headers: { 'content-type': 'text/plain' },
        });
        // Read as JSON whatever the type: `name=x` is not JSON.
        expect(text.status).toBe(422);
        expect(text.body.details).toEqual([{ path: 'body', message: 'is not valid JSON' }]);
      }
    }
  });
});

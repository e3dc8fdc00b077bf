import { ACTIONS, can, ROLES, type Action, type Role } from '@drover/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enrollTestAgent, workflow } from '../helpers/agent.js';
import { startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import type { ApiClient, ApiResponse } from '../helpers/http.js';
import { addUser } from '../helpers/members.js';
import { artifactUploader, createApp, createRelease, uploadArtifact } from '../helpers/ota.js';
import { issueApiToken } from '../helpers/tokens.js';

/**
 * The table of actions × roles (docs/management.md, "Roles"), one cell at a time: one
 * coordinator, a user of each role, each action taken once by each role. A role the table allows
 * succeeds; any other gets 403 and changes nothing. What each action needs (an agent, a trigger,
 * a draft release) is made by the owner first, so the call is the only thing the role does.
 */

let t: TestCoordinator;
const clients = {} as Record<Role, ApiClient>;
const userIds = {} as Record<Role, string>;
let agentId: string;
let workflowId: string;
let triggerId: string;
let n = 0;
const unique = (what: string) => `${what}-${++n}`;

function org(path = ''): string {
  return `/orgs/${t.orgId}${path}`;
}

function created<T = { id: string }>(res: ApiResponse<T>, status = 201): T {
  if (res.status !== status) throw new Error(`setup: ${res.status} ${res.text}`);
  return res.body;
}

async function newAgent(): Promise<string> {
  const agent = await enrollTestAgent(t.owner, t.orgId, { name: unique('agent') });
  const put = await agent.request('PUT', '/v1/agent/workflows', { workflows: [workflow('build')] });
  if (put.status !== 200) throw new Error(`put workflows: ${put.status} ${put.text}`);
  return agent.agentId;
}

async function newTrigger(): Promise<string> {
  const body = {
    name: unique('trigger'),
    agentId,
    scopeType: 'workflow',
    workflowName: 'build',
    responseMode: 'async',
  };
  return created(await t.owner.post(org('/triggers'), { body })).id;
}

/** Each action, taken by `client`, with the status it answers when allowed. */
const CELLS: Record<Action, (client: ApiClient) => Promise<{ res: ApiResponse; ok: number }>> = {
  'org.read': async (c) => {
    const paths = ['', '/agents', '/triggers', '/jobs', '/workflows', '/files', '/apps', '/members', '/api-tokens'];
    for (const path of paths.slice(0, -1)) expect((await c.get(org(path))).status, path).toBe(200);
    return { res: await c.get(org(paths.at(-1))), ok: 200 };
  },
  'agents.enroll': async (c) => ({ res: await c.post(org('/enrollment-tokens'), { body: {} }), ok: 201 }),
  'agents.edit': async (c) => ({
    res: await c.patch(org(`/agents/${agentId}`), { body: { labels: { site: unique('site') } } }),
    ok: 200,
  }),
  'agents.revoke': async (c) => ({ res: await c.delete(org(`/agents/${await newAgent()}`)), ok: 200 }),
  'triggers.edit': async (c) => ({
    res: await c.patch(org(`/triggers/${triggerId}`), { body: { name: unique('renamed') } }),
    ok: 200,
  }),
  'triggers.delete': async (c) => ({ res: await c.delete(org(`/triggers/${await newTrigger()}`)), ok: 200 }),
  'triggers.run': async (c) => ({ res: await c.post(org(`/triggers/${triggerId}/run`), { body: {} }), ok: 202 }),
  'runs.force': async (c) => ({
    res: await c.post(org(`/triggers/${triggerId}/run`), { body: { force: true, forceReason: 'hotfix' } }),
    ok: 202,
  }),
  'jobs.cancel': async (c) => {
    const job = created<{ jobId: string }>(await t.owner.post(org(`/triggers/${triggerId}/run`), { body: {} }), 202);
    return { res: await c.post(`/jobs/${job.jobId}/cancel`), ok: 200 };
  },
  'files.write': async (c) => ({
    res: await c.post(org('/files/presign-upload'), { body: { cleanupRule: 'persistent', filename: unique('f') } }),
    ok: 201,
  }),
  'api_tokens.issue': async (c) => ({
    res: await c.post(org('/api-tokens'), { body: { name: unique('t'), scopes: [] } }),
    ok: 201,
  }),
  'api_tokens.revoke_any': async (c) => {
    const { id } = await issueApiToken(t.owner, t.orgId, []);
    return { res: await c.delete(org(`/api-tokens/${id}`)), ok: 200 };
  },
  'apps.edit': async (c) => ({
    res: await c.post(org('/apps'), { body: { slug: unique('app'), updateWorkflowName: 'build' } }),
    ok: 201,
  }),
  'apps.delete': async (c) => {
    const app = await createApp(t.owner, t.orgId, { slug: unique('app') });
    return { res: await c.delete(org(`/apps/${app.id}`)), ok: 204 };
  },
  'releases.publish': async (c) => {
    const app = await createApp(t.owner, t.orgId, { slug: unique('app') });
    const artifact = await uploadArtifact(await artifactUploader(t), unique('artifact'));
    const draft = await createRelease(t.owner, t.orgId, app.id, { version: '1.0.0', artifactFileId: artifact });
    return { res: await c.post(org(`/apps/${app.id}/releases/${draft.id}/publish`)), ok: 200 };
  },
  'workflows.limits': async (c) => ({
    res: await c.patch(org(`/workflows/${workflowId}`), { body: { rateLimitPerDay: 1000 } }),
    ok: 200,
  }),
  'storage.bindings': async (c) => ({
    res: await c.post(org('/storage-bindings'), { body: { name: unique('binding'), backend: 'local' } }),
    ok: 201,
  }),
  'members.manage': async (c) => ({
    res: await c.post(org('/members'), { body: { email: `${unique('invitee')}@example.test`, role: 'viewer' } }),
    ok: 201,
  }),
  // No chat provider is configured here: an allowed role gets past the role and finds no such
  // workspace (404), which is all this cell is about.
  'chat.integrations': async (c) => ({
    res: await c.delete(org('/chat-integrations/00000000-0000-4000-8000-000000000000')),
    ok: 404,
  }),
  'org.retention': async (c) => ({ res: await c.patch(org(), { body: { retention: { jobsDays: null } } }), ok: 200 }),
  'audit.read': async (c) => ({ res: await c.get(org('/audit')), ok: 200 }),
};

beforeAll(async () => {
  t = await startTestCoordinator();
  clients.owner = t.owner;
  userIds.owner = (await t.owner.get('/auth/session')).body.user.id;
  for (const role of ROLES.filter((r) => r !== 'owner')) {
    const added = await addUser(t.owner, t.orgId, `${role}@example.test`, role);
    clients[role] = added.client;
    userIds[role] = added.userId;
  }
  agentId = await newAgent();
  workflowId = (await t.owner.get(org('/workflows'))).body.find((w: { agentId: string }) => w.agentId === agentId).id;
  triggerId = await newTrigger();
});
afterAll(() => t?.close());

describe('the table of actions × roles', () => {
  const cells = ACTIONS.flatMap((action) => ROLES.map((role) => [action, role, can(role, action)] as const));
  it.each(cells)('%s by a %s: allowed %s', async (action, role, allowed) => {
    const { res, ok } = await CELLS[action](clients[role]);
    if (allowed) {
      expect(res.status, res.text).toBe(ok);
    } else {
      expect(res.status, res.text).toBe(403);
      expect(res.body.code).toBe('forbidden');
      expect(res.body.message).toMatch(/^Only an owner.* of the organization can do this|needs the owner role/);
    }
  });
});

describe('roles', () => {
  it('lists each member with their role, and refuses an unknown role with 422 naming the four', async () => {
    const members = (await t.owner.get(org('/members'))).body as { userId: string; role: Role }[];
    for (const role of ROLES) expect(members.find((m) => m.userId === userIds[role])?.role).toBe(role);
    const res = await t.owner.post(org('/members'), { body: { email: 'x@example.test', role: 'admin' } });
    expect(res.status).toBe(422);
    expect(res.body.details).toEqual([
      { path: 'body.role', message: 'must be one of "owner", "operator", "member", "viewer"' },
    ]);
    const patch = await t.owner.patch(org(`/members/${userIds.viewer}`), { body: { role: 'root' } });
    expect(patch.status).toBe(422);
  });

  it('refuses a viewer before reading the body: 403, not 422', async () => {
    const res = await clients.viewer.post(org('/triggers'), { body: { nonsense: true } });
    expect(res.status).toBe(403);
  });

  it('lets any role that issues tokens revoke its own, and only an owner revoke another member’s', async () => {
    const mine = created(await clients.member.post(org('/api-tokens'), { body: { name: unique('own'), scopes: [] } }));
    expect((await clients.member.delete(org(`/api-tokens/${mine.id}`))).status).toBe(200);
    const operators = created(
      await clients.operator.post(org('/api-tokens'), { body: { name: unique('op'), scopes: [] } }),
    );
    const refused = await clients.member.delete(org(`/api-tokens/${operators.id}`));
    expect(refused.status).toBe(403);
    expect(refused.body.message).toBe('Only an owner of the organization can do this');
    expect((await t.owner.delete(org(`/api-tokens/${operators.id}`))).status).toBe(200);
  });

  it('runs nothing and writes no file with the token of a member made a viewer; the token still reads', async () => {
    const { userId, client } = await addUser(t.owner, t.orgId, 'demoted@example.test', 'member');
    const { token } = await issueApiToken(client, t.orgId, [
      { type: 'trigger', triggerIds: [triggerId] },
      { type: 'storage', bindingIds: null, permissions: ['read', 'write', 'delete'] },
    ]);
    const bindings = (await t.owner.get(org('/storage-bindings'))).body as { id: string; isDefault: boolean }[];
    const bindingId = bindings.find((b) => b.isDefault)!.id;
    const presign = () =>
      t.api.post('/storage/files/presign-upload', { token, body: { bindingId, cleanupRule: 'ttl' } });
    expect((await presign()).status).toBe(201);
    expect((await t.owner.patch(org(`/members/${userId}`), { body: { role: 'viewer' } })).status).toBe(200);
    const run = await t.api.post(`/triggers/${triggerId}/run`, { token, body: {} });
    expect(run.status).toBe(403);
    expect(run.body.message).toBe("The API token's issuer is a viewer of the organization: its tokens run no triggers");
    const upload = await presign();
    expect(upload.status).toBe(403);
    expect(upload.body.message).toBe(
      "The API token's issuer is a viewer of the organization: its tokens only read files",
    );
    expect((await t.api.get('/storage/files', { token })).status).toBe(200);
  });

  it('audits a role change with the role before and after', async () => {
    const { userId } = await addUser(t.owner, t.orgId, 'promoted@example.test', 'viewer');
    expect((await t.owner.patch(org(`/members/${userId}`), { body: { role: 'operator' } })).status).toBe(200);
    const audit = (await t.owner.get(org('/audit'))).body as { action: string; targetId: string; metadata: object }[];
    expect(audit.find((e) => e.targetId === userId && e.action === 'member.update')?.metadata).toMatchObject({
      from: 'viewer',
      to: 'operator',
    });
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enrollTestAgent, workflow, type TestAgent } from '../helpers/agent.js';
import { auditEntries } from '../helpers/audit.js';
import { startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import { issueApiToken, type Grant } from '../helpers/tokens.js';

const AGENT_FIELDS = ['agentVersion', 'enrolledAt', 'hostname', 'id', 'lastSeenAt', 'name', 'os', 'status'];
const WORKFLOW_FIELDS = ['agentId', 'description', 'id', 'name', 'paramsSchema', 'version'];

describe('token discovery', () => {
  let t: TestCoordinator;
  /** Enrolled in this order: `a` is the oldest, `c` the newest. */
  let a: TestAgent;
  let b: TestAgent;
  let c: TestAgent;
  /** Triggers: on b with scopeType agent; on a for its `build` workflow; on c for `mid`. */
  let onB: string;
  let buildOnA: string;
  let midOnC: string;

  const params = [
    { name: 'ref', type: 'string' as const, required: true, pattern: '^[a-z]+$' },
    { name: 'level', type: 'enum' as const, options: ['low', 'high'], default: 'low' },
    { name: 'count', type: 'number' as const, min: 1, max: 9, description: 'how many' },
  ];

  const createTrigger = async (agentId: string, scope: { workflowName: string } | 'agent') => {
    const body =
      scope === 'agent'
        ? { name: 'any', agentId, scopeType: 'agent', responseMode: 'async' }
        : {
            name: scope.workflowName,
            agentId,
            scopeType: 'workflow',
            workflowName: scope.workflowName,
            responseMode: 'async',
          };
    const res = await t.owner.post(`/orgs/${t.orgId}/triggers`, { body });
    expect(res.status, res.text).toBe(201);
    return res.body.id as string;
  };
  const tokenFor = async (scopes: Grant[]) => (await issueApiToken(t.owner, t.orgId, scopes)).token;
  const get = (path: string, token: string) => t.api.get(path, { token });
  const ids = (list: { id: string }[]) => list.map((x) => x.id);
  /** Agents by id → the hostname they enrolled with, for readable `workflow@host` keys. */
  const hosts = new Map<string, string>();
  const enroll = async (hostname: string) => {
    const agent = await enrollTestAgent(t.owner, t.orgId, { hostname });
    hosts.set(agent.agentId, hostname);
    return agent;
  };
  const workflowKeys = (list: { name: string; agentId: string }[]) =>
    list.map((w) => `${w.name}@${hosts.get(w.agentId) ?? w.agentId}`);

  beforeAll(async () => {
    t = await startTestCoordinator({ env: { API_TOKEN_READ_RATE_LIMIT_PER_MINUTE: '100000' } });
    a = await enroll('a');
    b = await enroll('b');
    c = await enroll('c');
    for (const [agent, defs] of [
      [
        a,
        [
          workflow('zeta'),
          workflow('build', { paramsSchema: params, secretsKeys: ['DEPLOY_KEY'] }),
          workflow('deploy'),
        ],
      ],
      [b, [workflow('deploy'), workflow('alpha', { description: null, version: null })]],
      [c, [workflow('mid')]],
    ] as const) {
      const res = await agent.putWorkflows([...defs]);
      expect(res.status, res.text).toBeLessThan(300);
    }
    onB = await createTrigger(b.agentId, 'agent');
    buildOnA = await createTrigger(a.agentId, { workflowName: 'build' });
    midOnC = await createTrigger(c.agentId, { workflowName: 'mid' });
  });
  afterAll(() => t?.close());

  describe('grants', () => {
    it('an agent grant lists its agents newest first and all their workflows by name', async () => {
      const token = await tokenFor([{ type: 'agent', agentIds: [a.agentId, c.agentId] }]);
      const agents = await get('/agents', token);
      expect(agents.status).toBe(200);
      expect(ids(agents.body)).toEqual([c.agentId, a.agentId]);
      const workflows = await get('/workflows', token);
      expect(workflows.status).toBe(200);
      expect(workflowKeys(workflows.body)).toEqual(['build@a', 'deploy@a', 'mid@c', 'zeta@a']);
    });

    it("a trigger grant with scopeType agent lists the trigger's agent and all its workflows", async () => {
      const token = await tokenFor([{ type: 'trigger', triggerIds: [onB] }]);
      expect(ids((await get('/agents', token)).body)).toEqual([b.agentId]);
      expect(workflowKeys((await get('/workflows', token)).body)).toEqual(['alpha@b', 'deploy@b']);
    });

    it("a trigger grant with scopeType workflow lists the trigger's agent and only that workflow", async () => {
      const token = await tokenFor([{ type: 'trigger', triggerIds: [buildOnA] }]);
      expect(ids((await get('/agents', token)).body)).toEqual([a.agentId]);
      expect(workflowKeys((await get('/workflows', token)).body)).toEqual(['build@a']);
    });

    it('a storage grant alone lists no agents and no workflows', async () => {
      const token = await tokenFor([{ type: 'storage', bindingIds: null, permissions: ['read', 'write'] }]);
      for (const path of ['/agents', '/devices', '/workflows']) {
        const res = await get(path, token);
        expect(res.status).toBe(200);
        expect(res.body).toEqual([]);
      }
    });

    it('a token without grants lists nothing', async () => {
      const token = await tokenFor([]);
      expect((await get('/agents', token)).body).toEqual([]);
      expect((await get('/workflows', token)).body).toEqual([]);
    });

    it('an agent grant and a trigger grant together give the union, without duplicates', async () => {
      const token = await tokenFor([
        { type: 'agent', agentIds: [a.agentId] },
        { type: 'trigger', triggerIds: [onB, midOnC, buildOnA] },
        { type: 'storage', bindingIds: null, permissions: ['read'] },
      ]);
      expect(ids((await get('/agents', token)).body)).toEqual([c.agentId, b.agentId, a.agentId]);
      const workflows: { name: string; agentId: string }[] = (await get('/workflows', token)).body;
      expect(workflows.map((w) => w.name)).toEqual(['alpha', 'build', 'deploy', 'deploy', 'mid', 'zeta']);
      expect(workflowKeys(workflows).sort()).toEqual(['alpha@b', 'build@a', 'deploy@a', 'deploy@b', 'mid@c', 'zeta@a']);
      // Equal names are ordered by agent id, so the order is stable between calls.
      const deploys = workflows.filter((w) => w.name === 'deploy').map((w) => w.agentId);
      expect(deploys).toEqual([...deploys].sort());
    });

    it('several workflow-scoped triggers on one agent list each of their workflows once', async () => {
      const again = await createTrigger(a.agentId, { workflowName: 'build' });
      const zeta = await createTrigger(a.agentId, { workflowName: 'zeta' });
      const token = await tokenFor([{ type: 'trigger', triggerIds: [zeta, buildOnA, again] }]);
      expect(ids((await get('/agents', token)).body)).toEqual([a.agentId]);
      expect(workflowKeys((await get('/workflows', token)).body)).toEqual(['build@a', 'zeta@a']);
    });

    it('lists nothing of another organization, even to a token of that organization naming our ids', async () => {
      const org = await t.owner.post('/orgs', { body: { name: 'second' } });
      expect(org.status).toBe(201);
      const token = await issueApiToken(t.owner, org.body.id, []);
      expect((await get('/agents', token.token)).body).toEqual([]);
      expect((await get('/workflows', token.token)).body).toEqual([]);
    });
  });

  describe('representation', () => {
    it('returns exactly the spec fields of an agent, never its public key', async () => {
      const token = await tokenFor([{ type: 'agent', agentIds: [a.agentId] }]);
      const res = await get('/agents', token);
      expect(res.body).toHaveLength(1);
      const agent = res.body[0];
      expect(Object.keys(agent).sort()).toEqual(AGENT_FIELDS);
      expect(agent).toMatchObject({ id: a.agentId, hostname: 'a', agentVersion: '0.1.0-test' });
      expect(['pending', 'connected', 'disconnected']).toContain(agent.status);
      expect(Date.parse(agent.enrolledAt)).not.toBeNaN();
      expect(res.text).not.toContain(a.publicKey);
      expect(res.text).not.toMatch(/publicKey|orgId|revokedAt/);
    });

    it('returns exactly the spec fields of a workflow, with its params schema and never its secrets or steps', async () => {
      const token = await tokenFor([{ type: 'trigger', triggerIds: [buildOnA, onB] }]);
      const res = await get('/workflows', token);
      for (const w of res.body) expect(Object.keys(w).sort()).toEqual(WORKFLOW_FIELDS);
      const build = res.body.find((w: { name: string }) => w.name === 'build');
      expect(build).toEqual({
        id: expect.any(String),
        agentId: a.agentId,
        name: 'build',
        description: 'build workflow',
        version: '1',
        paramsSchema: params,
      });
      const alpha = res.body.find((w: { name: string }) => w.name === 'alpha');
      expect(alpha).toMatchObject({ description: null, version: null, paramsSchema: null });
      expect(res.text).not.toMatch(/secrets|DEPLOY_KEY|steps|"run"|rateLimit|removedAt|orgId/);
    });

    it('answers /devices exactly as /agents', async () => {
      const token = await tokenFor([
        { type: 'agent', agentIds: [b.agentId] },
        { type: 'trigger', triggerIds: [midOnC, buildOnA] },
      ]);
      const agents = await get('/agents', token);
      const devices = await get('/devices', token);
      expect(devices.status).toBe(200);
      expect(devices.text).toBe(agents.text);
      expect(devices.headers.get('content-type')).toBe(agents.headers.get('content-type'));
      expect(ids(devices.body)).toEqual([c.agentId, b.agentId, a.agentId]);
      // The list's JSON, made once, is sent as it is again (until something changes: renamed, below).
      const again = await get('/agents', token);
      expect(again.text).toBe(agents.text);
      expect(again.headers.get('content-type')).toBe('application/json; charset=utf-8');
    });

    it("returns the token's own name, scopes, limits and expiry, and nothing else", async () => {
      const expiresAt = new Date(Date.now() + 86_400_000).toISOString();
      const scopes: Grant[] = [
        { type: 'agent', agentIds: [a.agentId] },
        { type: 'storage', bindingIds: null, permissions: ['read'] },
      ];
      const issued = await issueApiToken(t.owner, t.orgId, scopes, {
        name: 'ci deploys',
        rateLimitPerMinute: 5,
        rateLimitPerHour: 100,
        rateLimitPerDay: 1000,
        expiresAt,
      });
      const res = await get('/token', issued.token);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        name: 'ci deploys',
        scopes: issued.body.scopes,
        rateLimit: { perMinute: 5, perHour: 100, perDay: 1000 },
        expiresAt,
      });
      expect(res.body.scopes).toEqual(scopes);
      expect(res.text).not.toContain(issued.id);
      expect(res.text).not.toContain(issued.token);
      expect(res.text).not.toMatch(/hash|hint|revokedAt|createdAt/i);
    });

    it('returns null limits and a null expiry for a token issued without them', async () => {
      const res = await get('/token', await tokenFor([]));
      expect(res.body).toEqual({
        name: 'test token',
        scopes: [],
        rateLimit: { perMinute: null, perHour: null, perDay: null },
        expiresAt: null,
      });
    });

    it('refuses query parameters, which these routes do not take, with 422', async () => {
      const token = await tokenFor([{ type: 'agent', agentIds: [a.agentId] }]);
      for (const path of ['/token', '/agents', '/devices', '/workflows']) {
        const res = await get(`${path}?limit=1`, token);
        expect(res.status, path).toBe(422);
        expect(res.body).toMatchObject({ statusCode: 422, code: 'validation_failed', message: expect.any(String) });
      }
    });
  });

  describe('changes are seen at once', () => {
    it('never lists removed workflows, including the one a trigger names', async () => {
      const d = await enroll('d');
      expect((await d.putWorkflows([workflow('one'), workflow('two'), workflow('three')])).status).toBeLessThan(300);
      const onTwo = await createTrigger(d.agentId, { workflowName: 'two' });
      const byAgent = await tokenFor([{ type: 'agent', agentIds: [d.agentId] }]);
      const byTrigger = await tokenFor([{ type: 'trigger', triggerIds: [onTwo] }]);
      expect((await get('/workflows', byAgent)).body.map((w: { name: string }) => w.name)).toEqual([
        'one',
        'three',
        'two',
      ]);
      expect((await get('/workflows', byTrigger)).body.map((w: { name: string }) => w.name)).toEqual(['two']);

      expect((await d.putWorkflows([workflow('three')])).status).toBeLessThan(300);
      expect((await get('/workflows', byAgent)).body.map((w: { name: string }) => w.name)).toEqual(['three']);
      expect((await get('/workflows', byTrigger)).body).toEqual([]);
      // The agent itself is still reachable through the trigger.
      expect(ids((await get('/agents', byTrigger)).body)).toEqual([d.agentId]);

      expect((await d.putWorkflows([workflow('two'), workflow('three')])).status).toBeLessThan(300);
      expect((await get('/workflows', byTrigger)).body.map((w: { name: string }) => w.name)).toEqual(['two']);
    });

    it('lists a renamed agent under its new name', async () => {
      const e = await enroll('e');
      const token = await tokenFor([{ type: 'agent', agentIds: [e.agentId] }]);
      expect((await get('/agents', token)).body[0].name).not.toBe('renamed');
      const renamed = await t.owner.patch(`/orgs/${t.orgId}/agents/${e.agentId}`, { body: { name: 'renamed' } });
      expect(renamed.status, renamed.text).toBe(200);
      expect((await get('/agents', token)).body[0].name).toBe('renamed');
    });

    it('leaves out a revoked agent and its workflows, whichever grant reached it', async () => {
      const f = await enroll('f');
      expect((await f.putWorkflows([workflow('fw'), workflow('fx')])).status).toBeLessThan(300);
      const onF = await createTrigger(f.agentId, { workflowName: 'fw' });
      const token = await tokenFor([
        { type: 'agent', agentIds: [f.agentId, c.agentId] },
        { type: 'trigger', triggerIds: [onF] },
      ]);
      expect(ids((await get('/agents', token)).body)).toEqual([f.agentId, c.agentId]);
      expect(workflowKeys((await get('/workflows', token)).body)).toEqual(['fw@f', 'fx@f', 'mid@c']);

      const revoked = await t.owner.delete(`/orgs/${t.orgId}/agents/${f.agentId}`);
      expect(revoked.status, revoked.text).toBe(200);
      expect(ids((await get('/agents', token)).body)).toEqual([c.agentId]);
      expect(workflowKeys((await get('/workflows', token)).body)).toEqual(['mid@c']);
    });

    it('gives nothing through a deleted trigger', async () => {
      const onC = await createTrigger(c.agentId, 'agent');
      const token = await tokenFor([{ type: 'trigger', triggerIds: [onC] }]);
      expect(ids((await get('/agents', token)).body)).toEqual([c.agentId]);
      const deleted = await t.owner.delete(`/orgs/${t.orgId}/triggers/${onC}`);
      expect(deleted.status, deleted.text).toBe(200);
      expect((await get('/agents', token)).body).toEqual([]);
      expect((await get('/workflows', token)).body).toEqual([]);
    });

    it('gives nothing through a trigger turned into a cron trigger, which the token cannot run', async () => {
      const onC = await createTrigger(c.agentId, { workflowName: 'mid' });
      const token = await tokenFor([{ type: 'trigger', triggerIds: [onC] }]);
      expect(ids((await get('/agents', token)).body)).toEqual([c.agentId]);
      const cron = await t.owner.patch(`/orgs/${t.orgId}/triggers/${onC}`, {
        body: { type: 'cron', cronExpression: '0 3 * * *' },
      });
      expect(cron.status, cron.text).toBe(200);
      expect((await get('/agents', token)).body).toEqual([]);
      expect((await get('/workflows', token)).body).toEqual([]);
      const back = await t.owner.patch(`/orgs/${t.orgId}/triggers/${onC}`, { body: { type: 'webhook' } });
      expect(back.status, back.text).toBe(200);
      expect(ids((await get('/agents', token)).body)).toEqual([c.agentId]);
    });

    it('follows a trigger moved to another agent', async () => {
      const onA = await createTrigger(a.agentId, 'agent');
      const token = await tokenFor([{ type: 'trigger', triggerIds: [onA] }]);
      expect(ids((await get('/agents', token)).body)).toEqual([a.agentId]);
      const moved = await t.owner.patch(`/orgs/${t.orgId}/triggers/${onA}`, { body: { agentId: b.agentId } });
      expect(moved.status, moved.text).toBe(200);
      expect(ids((await get('/agents', token)).body)).toEqual([b.agentId]);
      expect(workflowKeys((await get('/workflows', token)).body)).toEqual(['alpha@b', 'deploy@b']);
    });
  });

  describe('audit', () => {
    const entriesOf = async (tokenId: string) => {
      await t.coordinator.ctx.audit.flush(); // the entries of reads are written after the answer
      const all = await auditEntries(t.owner, t.orgId);
      return all.filter((e) => e.actorId === tokenId).reverse();
    };

    it('records api_token.discover with exactly the resource and the count for each listing call', async () => {
      const issued = await issueApiToken(t.owner, t.orgId, [{ type: 'agent', agentIds: [a.agentId, b.agentId] }]);
      for (const path of ['/agents', '/devices', '/workflows']) {
        expect((await get(path, issued.token)).status).toBe(200);
      }
      const entries = await entriesOf(issued.id);
      expect(entries.map((e) => ({ action: e.action, actorType: e.actorType, metadata: e.metadata }))).toEqual([
        { action: 'api_token.discover', actorType: 'api_token', metadata: { resource: 'agents', count: 2 } },
        { action: 'api_token.discover', actorType: 'api_token', metadata: { resource: 'devices', count: 2 } },
        { action: 'api_token.discover', actorType: 'api_token', metadata: { resource: 'workflows', count: 5 } },
      ]);
      // All in the organization's audit log: they were listed under it.
    });

    it('records a count of zero for an empty listing', async () => {
      const issued = await issueApiToken(t.owner, t.orgId, [
        { type: 'storage', bindingIds: null, permissions: ['read'] },
      ]);
      await get('/workflows', issued.token);
      expect((await entriesOf(issued.id)).map((e) => e.metadata)).toEqual([{ resource: 'workflows', count: 0 }]);
    });

    it('records nothing for /token', async () => {
      const issued = await issueApiToken(t.owner, t.orgId, []);
      expect((await get('/token', issued.token)).status).toBe(200);
      expect((await get('/token', issued.token)).status).toBe(200);
      expect(await entriesOf(issued.id)).toEqual([]);
    });
  });
});

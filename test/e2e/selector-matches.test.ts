import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enrollTestAgent, workflow, type TestAgent } from '../helpers/agent.js';
import { startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import { outsider } from '../helpers/members.js';

/**
 * What a trigger on a label selector would run on if called now (docs/fleets.md, "What a selector
 * matches now"), as the trigger's page and form show it: on both databases.
 */
describe('GET /orgs/:orgId/selector-matches', () => {
  let t: TestCoordinator;
  const agents = new Map<string, TestAgent>();
  const matches = async (query: string) => {
    const res = await t.owner.get<{ versions: { agentId: string; paramsSchema: unknown }[] }>(
      `/orgs/${t.orgId}/selector-matches?${query}`,
    );
    expect(res.status, res.text).toBe(200);
    return res.body;
  };

  beforeAll(async () => {
    t = await startTestCoordinator();
    for (const name of ['gw-b', 'gw-a', 'gw-c', 'gw-gone', 'kiosk']) {
      const agent = await enrollTestAgent(t.owner, t.orgId, { hostname: name });
      agents.set(name, agent);
      const role = name === 'kiosk' ? 'kiosk' : 'gateway';
      const res = await t.owner.patch(`/orgs/${t.orgId}/agents/${agent.agentId}`, { body: { labels: { role } } });
      expect(res.status, res.text).toBe(200);
    }
    const rotate = workflow('rotate');
    const rotateWithParam = workflow('rotate', { paramsSchema: [{ name: 'keep', type: 'number' }] });
    expect((await agents.get('gw-a')!.putWorkflows([rotate, workflow('status')])).status).toBe(200);
    expect((await agents.get('gw-b')!.putWorkflows([rotateWithParam])).status).toBe(200);
    expect((await agents.get('gw-c')!.putWorkflows([workflow('status')])).status).toBe(200);
    expect((await agents.get('gw-gone')!.putWorkflows([workflow('wipe')])).status).toBe(200);
    expect((await agents.get('kiosk')!.putWorkflows([workflow('show')])).status).toBe(200);
    const revoked = await t.owner.delete(`/orgs/${t.orgId}/agents/${agents.get('gw-gone')!.agentId}`);
    expect(revoked.status, revoked.text).toBe(200);
  });
  afterAll(() => t?.close());

  it('names the agents the selector matches by name, revoked ones aside, and the workflows they report', async () => {
    expect(await matches('selector=role%3Dgateway')).toEqual({
      matching: 3,
      names: ['gw-a', 'gw-b', 'gw-c'],
      lacking: 0,
      lackingNames: [],
      workflowNames: ['rotate', 'status'],
      versions: [],
    });
    expect(await matches('selector=role%3Dprinter&workflowName=rotate')).toEqual({
      matching: 0,
      names: [],
      lacking: 0,
      lackingNames: [],
      workflowNames: [],
      versions: [],
    });
  });

  it('says which of them lack the workflow, and its versions by params', async () => {
    const body = await matches('selector=role%20in%20(gateway)&workflowName=rotate');
    expect(body).toMatchObject({ matching: 3, lacking: 1, lackingNames: ['gw-c'] });
    expect(body.versions.map((v) => [v.agentId, v.paramsSchema]).sort()).toEqual(
      [
        [agents.get('gw-a')!.agentId, null],
        [agents.get('gw-b')!.agentId, [{ name: 'keep', type: 'number' }]],
      ].sort(),
    );
  });

  it('refuses a selector it cannot read with 422 at it, and hides the organization from outsiders', async () => {
    for (const query of ['', 'selector=', 'selector=role%20in%20gateway', `selector=${'a'.repeat(1025)}`]) {
      const res = await t.owner.get<{ details: { path: string }[] }>(`/orgs/${t.orgId}/selector-matches?${query}`);
      expect(res.status, query).toBe(422);
      expect(res.body.details.map((d) => d.path)).toContain('querystring.selector');
    }
    // Only spaces: no requirement, which a trigger refuses too (it would match every agent).
    const blank = await t.owner.get<{ details: { path: string; message: string }[] }>(
      `/orgs/${t.orgId}/selector-matches?selector=%20%20`,
    );
    expect(blank.status).toBe(422);
    expect(blank.body.details).toEqual([
      { path: 'querystring.selector', message: expect.stringContaining('must select by at least one label') },
    ]);
    const stranger = await outsider(t.owner, t.orgId, 'stranger@example.test');
    expect((await stranger.client.get(`/orgs/${t.orgId}/selector-matches?selector=role%3Dgateway`)).status).toBe(404);
  });
});

import { agentEventsOf } from '../../coordinator/src/domain/agents/agent-events.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import { enrollTestAgent, workflow, type TestAgent } from '../helpers/agent.js';
import { addUser } from '../helpers/members.js';
import type { ApiClient } from '../helpers/http.js';

const AGENT_FIELDS = ['agentVersion', 'enrolledAt', 'hostname', 'id', 'lastSeenAt', 'name', 'os', 'status'];
const UNKNOWN_ID = '00000000-0000-4000-8000-000000000000';

describe('agent management', () => {
  let t: TestCoordinator;
  let first: TestAgent;
  let second: TestAgent;
  let member: ApiClient;
  beforeAll(async () => {
    t = await startTestCoordinator();
    first = await enrollTestAgent(t.owner, t.orgId, { hostname: 'edge-first' });
    second = await enrollTestAgent(t.owner, t.orgId, { hostname: 'edge-second' });
    member = (await addUser(t.owner, t.orgId, 'member@example.test')).client;
  });
  afterAll(() => t?.close());

  it('lists agents most recently registered first with exactly the spec fields', async () => {
    const res = await member.get(`/orgs/${t.orgId}/agents`);
    expect(res.status).toBe(200);
    expect(res.body.map((a: { id: string }) => a.id)).toEqual([second.agentId, first.agentId]);
    for (const agent of res.body) expect(Object.keys(agent).sort()).toEqual(AGENT_FIELDS);
    expect(res.body[0]).toMatchObject({
      hostname: 'edge-second',
      status: 'pending',
      agentVersion: '0.1.0-test',
      lastSeenAt: null,
    });
    expect(res.text).not.toContain(second.publicKey);
  });

  it('reads one agent, and answers 404 for an unknown one and for a malformed id', async () => {
    const res = await member.get(`/orgs/${t.orgId}/agents/${first.agentId}`);
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(AGENT_FIELDS);
    expect(res.body.id).toBe(first.agentId);
    expect((await member.get(`/orgs/${t.orgId}/agents/${UNKNOWN_ID}`)).status).toBe(404);
    expect((await member.get(`/orgs/${t.orgId}/agents/edge-first`)).status).toBe(404);
  });

  it('renames an agent (any member), trimming the name', async () => {
    const res = await member.patch(`/orgs/${t.orgId}/agents/${first.agentId}`, {
      body: { name: '  Rack 4 / slot 2 ' },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: first.agentId, name: 'Rack 4 / slot 2', hostname: 'edge-first' });
    expect(Object.keys(res.body).sort()).toEqual(AGENT_FIELDS);
    expect((await t.owner.get(`/orgs/${t.orgId}/agents/${first.agentId}`)).body.name).toBe('Rack 4 / slot 2');
    const audit = await t.owner.get(`/orgs/${t.orgId}/audit?action=agent.rename`);
    expect(audit.body[0]).toMatchObject({ targetId: first.agentId, metadata: { to: 'Rack 4 / slot 2' } });
  });

  it('refuses bad names with 422 and unknown agents with 404', async () => {
    const path = `/orgs/${t.orgId}/agents/${first.agentId}`;
    for (const body of [
      {},
      { name: '' },
      { name: '  ' },
      { name: 'x'.repeat(256) },
      { name: 5 },
      { name: null },
      { name: 'a', status: 'connected' },
      { name: 'tab\there' },
    ]) {
      const res = await t.owner.patch(path, { body });
      expect(res.status, JSON.stringify(body)).toBe(422);
      expect(res.body.code).toBe('validation_failed');
    }
    expect((await t.owner.patch(`/orgs/${t.orgId}/agents/${UNKNOWN_ID}`, { body: { name: 'x' } })).status).toBe(404);
    expect((await t.owner.patch(path, { body: { name: 'x'.repeat(255) } })).status).toBe(200);
  });

  it('lets only an owner revoke', async () => {
    const res = await member.delete(`/orgs/${t.orgId}/agents/${second.agentId}`);
    expect(res.status).toBe(403);
    expect((await t.owner.get(`/orgs/${t.orgId}/agents/${second.agentId}`)).body.status).toBe('pending');
  });

  it('revokes an agent: status revoked, listeners told, signed requests refused, repeat is harmless', async () => {
    expect((await second.putWorkflows([workflow('build')])).status).toBe(200);
    const told: string[] = [];
    const unsubscribe = agentEventsOf(t.coordinator.ctx).onRevoked((agent) => told.push(agent.id));
    try {
      const res = await t.owner.delete(`/orgs/${t.orgId}/agents/${second.agentId}`);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ id: second.agentId, status: 'revoked' });
      expect(Object.keys(res.body).sort()).toEqual(AGENT_FIELDS);
      expect(told).toEqual([second.agentId]);

      const refused = await second.putWorkflows([workflow('build')]);
      expect(refused.status).toBe(401);

      const again = await t.owner.delete(`/orgs/${t.orgId}/agents/${second.agentId}`);
      expect(again.status).toBe(200);
      expect(again.body.status).toBe('revoked');
      expect(told).toEqual([second.agentId]);
    } finally {
      unsubscribe();
    }
    const audit = await t.owner.get(`/orgs/${t.orgId}/audit?action=agent.revoke`);
    expect(audit.body).toHaveLength(1);
    expect(audit.body[0]).toMatchObject({
      targetType: 'agent',
      targetId: second.agentId,
      metadata: { previousStatus: 'pending' },
    });
    // The other agent is untouched.
    expect((await first.putWorkflows([workflow('build')])).status).toBe(200);
  });

  it('answers 404 for a revoke of an unknown agent', async () => {
    expect((await t.owner.delete(`/orgs/${t.orgId}/agents/${UNKNOWN_ID}`)).status).toBe(404);
  });
});

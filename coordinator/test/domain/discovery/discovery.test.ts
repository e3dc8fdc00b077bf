import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase, type Db } from '../../../src/db/database.js';
import { migrate } from '../../../src/db/migrate.js';
import { createSqliteRepositories } from '../../../src/sqlite-repositories.js';
import type { Repositories } from '../../../src/domain/model/repositories.js';
import { reachableAgents, runnableWorkflows } from '../../../src/domain/discovery/discovery.js';
import type { Grant } from '../../../src/domain/model/api-tokens.js';
import { newId } from '../../../src/util/ids.js';
import { enrollAgent, triggerRow } from '../../db/fixture.js';

const AT = '2026-01-02T03:04:05.000Z';

let db: Db;
let repos: Repositories;
let orgId: string;
let otherOrgId: string;

async function makeOrg(name: string): Promise<string> {
  const userId = newId();
  await repos.users.insert({ id: userId, email: `${userId}@example.test`, passwordHash: 'x', createdAt: AT });
  const id = newId();
  await repos.orgs.create({ id, name, createdAt: AT }, userId);
  return id;
}

async function makeAgent(org: string, name: string, workflowNames: string[] = []): Promise<string> {
  const id = await enrollAgent(repos, org, AT, { name, hostname: name });
  await setWorkflows(org, id, workflowNames);
  return id;
}

async function setWorkflows(org: string, agentId: string, names: string[]): Promise<void> {
  await repos.workflows.replaceForAgent(
    org,
    agentId,
    names.map((name) => ({ name, steps: [{ run: 'true' }] })),
    AT,
  );
}

async function makeTrigger(org: string, agentId: string, scope: { workflowName: string } | 'agent'): Promise<string> {
  const trigger = triggerRow({
    id: newId(),
    orgId: org,
    agentId,
    ...(scope === 'agent' ? {} : { scopeType: 'workflow', workflowName: scope.workflowName }),
    createdAt: AT,
    updatedAt: AT,
  });
  await repos.triggers.insert(trigger);
  return trigger.id;
}

const token = (scopes: Grant[], org = orgId) => ({ orgId: org, scopes });
const agentNames = async (scopes: Grant[]) => (await reachableAgents(repos, token(scopes))).map((a) => a.name);
const workflowKeys = async (scopes: Grant[]) =>
  (await runnableWorkflows(repos, token(scopes))).map((w) => `${w.name}@${w.agentId}`);

beforeEach(async () => {
  db = openDatabase(':memory:');
  migrate(db);
  repos = createSqliteRepositories(db);
  orgId = await makeOrg('acme');
  otherOrgId = await makeOrg('other');
});
afterEach(() => db.close());

describe('reachableAgents', () => {
  it('lists the agents of an agent grant, most recently registered first', async () => {
    const a = await makeAgent(orgId, 'a');
    const b = await makeAgent(orgId, 'b');
    await makeAgent(orgId, 'not granted');
    expect(await agentNames([{ type: 'agent', agentIds: [a, b] }])).toEqual(['b', 'a']);
  });

  it('lists the agent of each granted trigger once, whatever its scope type', async () => {
    const a = await makeAgent(orgId, 'a', ['build']);
    const b = await makeAgent(orgId, 'b', ['deploy']);
    const t1 = await makeTrigger(orgId, a, 'agent');
    const t2 = await makeTrigger(orgId, a, { workflowName: 'build' });
    const t3 = await makeTrigger(orgId, b, { workflowName: 'deploy' });
    expect(await agentNames([{ type: 'trigger', triggerIds: [t1, t2, t3] }])).toEqual(['b', 'a']);
  });

  it('unites an agent grant and a trigger grant without duplicates', async () => {
    const a = await makeAgent(orgId, 'a');
    const b = await makeAgent(orgId, 'b');
    const c = await makeAgent(orgId, 'c');
    const t = await makeTrigger(orgId, c, 'agent');
    const t2 = await makeTrigger(orgId, a, 'agent');
    expect(
      await agentNames([
        { type: 'agent', agentIds: [a, b] },
        { type: 'trigger', triggerIds: [t, t2] },
      ]),
    ).toEqual(['c', 'b', 'a']);
  });

  it('gives nothing for a storage grant alone', async () => {
    await makeAgent(orgId, 'a', ['build']);
    const scopes: Grant[] = [{ type: 'storage', bindingIds: null, permissions: ['read'] }];
    expect(await agentNames(scopes)).toEqual([]);
    expect(await workflowKeys(scopes)).toEqual([]);
  });

  it('leaves out revoked agents, deleted triggers and agents of another organization', async () => {
    const revoked = await makeAgent(orgId, 'revoked');
    await repos.agents.revoke(orgId, revoked, AT);
    const viaDeleted = await makeAgent(orgId, 'via deleted trigger');
    const deleted = await makeTrigger(orgId, viaDeleted, 'agent');
    await repos.triggers.softDelete(orgId, deleted, AT);
    const foreign = await makeAgent(otherOrgId, 'foreign');
    const foreignTrigger = await makeTrigger(otherOrgId, foreign, 'agent');
    const kept = await makeAgent(orgId, 'kept');
    expect(
      await agentNames([
        { type: 'agent', agentIds: [revoked, foreign, kept, newId()] },
        { type: 'trigger', triggerIds: [deleted, foreignTrigger, newId()] },
      ]),
    ).toEqual(['kept']);
  });
});

describe('runnableWorkflows', () => {
  it('lists every active workflow of granted agents, ascending by name', async () => {
    const a = await makeAgent(orgId, 'a', ['zeta', 'alpha']);
    const b = await makeAgent(orgId, 'b', ['mid', 'alpha']);
    await makeAgent(orgId, 'c', ['not-granted']);
    const keys = await workflowKeys([{ type: 'agent', agentIds: [a, b] }]);
    expect(keys.map((k) => k.split('@')[0])).toEqual(['alpha', 'alpha', 'mid', 'zeta']);
    expect(keys.slice(0, 2)).toEqual([`alpha@${a}`, `alpha@${b}`].sort());
  });

  it('lists all workflows of the agent of a trigger with scopeType agent', async () => {
    const a = await makeAgent(orgId, 'a', ['b2', 'a1']);
    const t = await makeTrigger(orgId, a, 'agent');
    expect(await workflowKeys([{ type: 'trigger', triggerIds: [t] }])).toEqual([`a1@${a}`, `b2@${a}`]);
  });

  it('lists only the one workflow of a trigger with scopeType workflow', async () => {
    const a = await makeAgent(orgId, 'a', ['build', 'deploy']);
    const t = await makeTrigger(orgId, a, { workflowName: 'deploy' });
    expect(await workflowKeys([{ type: 'trigger', triggerIds: [t] }])).toEqual([`deploy@${a}`]);
  });

  it('unites grants without duplicates and keeps the name order', async () => {
    const a = await makeAgent(orgId, 'a', ['m', 'x']);
    const b = await makeAgent(orgId, 'b', ['c', 'n', 'z']);
    const c = await makeAgent(orgId, 'c', ['b', 'y']);
    const triggers = [
      await makeTrigger(orgId, a, { workflowName: 'm' }), // already covered by the agent grant
      await makeTrigger(orgId, b, { workflowName: 'z' }),
      await makeTrigger(orgId, b, { workflowName: 'z' }),
      await makeTrigger(orgId, b, { workflowName: 'c' }),
      await makeTrigger(orgId, c, 'agent'),
    ];
    expect(
      await workflowKeys([
        { type: 'agent', agentIds: [a] },
        { type: 'trigger', triggerIds: triggers },
      ]),
    ).toEqual([`b@${c}`, `c@${b}`, `m@${a}`, `x@${a}`, `y@${c}`, `z@${b}`]);
  });

  it('never lists removed workflows, even when a trigger names one', async () => {
    const a = await makeAgent(orgId, 'a', ['keep', 'drop']);
    const b = await makeAgent(orgId, 'b', ['gone']);
    const t = await makeTrigger(orgId, b, { workflowName: 'gone' });
    await setWorkflows(orgId, a, ['keep']);
    await setWorkflows(orgId, b, []);
    expect(
      await workflowKeys([
        { type: 'agent', agentIds: [a] },
        { type: 'trigger', triggerIds: [t] },
      ]),
    ).toEqual([`keep@${a}`]);
  });

  it('gives nothing for a trigger naming a workflow its agent never reported', async () => {
    const a = await makeAgent(orgId, 'a', ['build']);
    const t = await makeTrigger(orgId, a, { workflowName: 'unknown' });
    expect(await workflowKeys([{ type: 'trigger', triggerIds: [t] }])).toEqual([]);
  });

  it('leaves out workflows of revoked agents, deleted triggers and other organizations', async () => {
    const revoked = await makeAgent(orgId, 'revoked', ['r']);
    const viaDeleted = await makeAgent(orgId, 'via deleted', ['d']);
    const single = await makeAgent(orgId, 'single revoked', ['s']);
    const foreign = await makeAgent(otherOrgId, 'foreign', ['f']);
    const deleted = await makeTrigger(orgId, viaDeleted, 'agent');
    const toSingle = await makeTrigger(orgId, single, { workflowName: 's' });
    await repos.triggers.softDelete(orgId, deleted, AT);
    await repos.agents.revoke(orgId, revoked, AT);
    await repos.agents.revoke(orgId, single, AT);
    expect(
      await workflowKeys([
        { type: 'agent', agentIds: [revoked, foreign] },
        { type: 'trigger', triggerIds: [deleted, toSingle] },
      ]),
    ).toEqual([]);
  });
});

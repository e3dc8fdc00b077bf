import { beforeEach, describe, expect, it } from 'vitest';
import type { PoolTaker } from '../../../src/domain/model/pools.js';
import { newId } from '../../../src/util/ids.js';
import { triggerRow } from '../fixture.js';
import { DATABASES, databasesOfThisFile } from './databases.js';
import { enroll, insertJob, orgWithAgent } from './fixture.js';

const AT = '2030-01-01T10:00:00.000Z';
const databases = databasesOfThisFile();

describe.each(DATABASES)('pool claims (%s)', (kind) => {
  const t = databases.use(kind);
  let orgId: string;
  let agentId: string;
  let triggerId: string;

  beforeEach(async () => {
    ({ orgId, agentId } = await orgWithAgent(t.repos, AT));
    triggerId = newId();
    await t.repos.triggers.insert(
      triggerRow({
        id: triggerId,
        orgId,
        agentId: null,
        agentSelector: 'role=builder',
        fanout: 'one',
        scopeType: 'workflow',
        workflowName: 'build',
      }),
    );
  });

  const taker = (
    id: string,
    capacity: number,
    version: { timeoutMs?: number | null; takes?: (params: Record<string, unknown>) => boolean } = {},
  ): PoolTaker => ({
    id,
    orgId,
    workflows: new Map([
      [
        'build',
        { id: `workflow-of-${id}`, timeoutMs: version.timeoutMs ?? null, takes: version.takes ?? (() => true) },
      ],
    ]),
    matches: (selector) => selector === 'role=builder',
    capacity,
  });
  /** Jobs waiting in the pool, oldest first. */
  const waiting = async (n: number) => {
    const ids: string[] = [];
    for (let i = 0; i < n; i++) {
      const job = await insertJob(
        t,
        { orgId, agentId },
        {
          agentId: null,
          triggerId,
          workflowName: 'build',
          createdAt: AT,
          timeoutMs: null,
        },
      );
      ids.push(job.id);
    }
    return ids;
  };

  it('tells which organizations have jobs waiting in a pool, until they are taken', async () => {
    expect(await t.repos.pools.anyWaiting(orgId)).toBe(false);
    expect(await t.repos.pools.waitingOrgs()).toEqual([]);
    // A job given to an agent waits in no pool.
    await insertJob(t, { orgId, agentId }, { triggerId, workflowName: 'build', createdAt: AT, timeoutMs: null });
    expect(await t.repos.pools.anyWaiting(orgId)).toBe(false);
    await waiting(2);
    expect(await t.repos.pools.anyWaiting(orgId)).toBe(true);
    expect(await t.repos.pools.waitingOrgs()).toEqual([orgId]);
    expect(await t.other.pools.claim(taker(agentId, 4), 4)).toHaveLength(2);
    expect(await t.repos.pools.anyWaiting(orgId)).toBe(false);
    expect(await t.repos.pools.waitingOrgs()).toEqual([]);
  });

  it('leaves the jobs of a pool whose selector the agent does not meet, and of a workflow it does not report', async () => {
    const printers = newId();
    await t.repos.triggers.insert(
      triggerRow({
        id: printers,
        orgId,
        agentId: null,
        agentSelector: 'role=printer',
        fanout: 'one',
        scopeType: 'workflow',
        workflowName: 'build',
      }),
    );
    const other = await insertJob(
      t,
      { orgId, agentId },
      { agentId: null, triggerId: printers, workflowName: 'build', createdAt: AT, timeoutMs: null },
    );
    const unreported = await insertJob(
      t,
      { orgId, agentId },
      { agentId: null, triggerId, workflowName: 'test', createdAt: AT, timeoutMs: null },
    );
    const [mine] = await waiting(1);
    expect((await t.repos.pools.claim(taker(agentId, 4), 4)).map((j) => j.id)).toEqual([mine]);
    expect(await t.repos.jobs.findById(other.id)).toMatchObject({ agentId: null, status: 'pending' });
    expect(await t.repos.jobs.findById(unreported.id)).toMatchObject({ agentId: null, status: 'pending' });
  });

  it('gives each waiting job to one agent, whichever coordinators claim at once', async () => {
    const ids = await waiting(12);
    const agents = [agentId];
    for (let i = 0; i < 5; i++) agents.push(await enroll(t.repos, orgId, AT));
    const claims = await Promise.all(agents.map((id, i) => (i % 2 ? t.other : t.repos).pools.claim(taker(id, 2), 2)));
    const taken = claims.flat();
    expect(taken.map((j) => j.id).sort()).toEqual([...ids].sort());
    claims.forEach((jobs, i) => {
      expect(jobs.length).toBe(2);
      for (const job of jobs) expect(job).toMatchObject({ agentId: agents[i], workflowId: `workflow-of-${agents[i]}` });
    });
    expect(await t.repos.pools.claim(taker(agentId, 4), 4)).toEqual([]);
  });

  it('takes no more than the room the agent has as the database holds it, counting jobs given to it meanwhile', async () => {
    const [oldest, next] = await waiting(2);
    // An admission gave the agent a job a moment ago: its stream, not told yet, asks for 2 places.
    await insertJob(t, { orgId, agentId }, { triggerId, workflowName: 'build', createdAt: AT, timeoutMs: null });
    const ended = await insertJob(t, { orgId, agentId }, { workflowName: 'build', createdAt: AT, timeoutMs: null });
    await t.exec(`UPDATE jobs SET status = 'success' WHERE id = '${ended.id}'`);
    expect((await t.repos.pools.claim(taker(agentId, 1), 1)).map((j) => j.id)).toEqual([]);
    expect((await t.repos.pools.claim(taker(agentId, 2), 2)).map((j) => j.id)).toEqual([oldest]);
    expect((await t.repos.pools.claim(taker(agentId, 3), 1)).map((j) => j.id)).toEqual([next]);
  });

  it("passes over the jobs whose params the agent's version refuses, and gives the others its version's timeout", async () => {
    const [first] = await waiting(1);
    const refused = await insertJob(
      t,
      { orgId, agentId },
      { agentId: null, triggerId, workflowName: 'build', createdAt: AT, timeoutMs: 60_000, params: { days: 90 } },
    );
    const [last] = await waiting(1);
    const taken = await t.repos.pools.claim(
      taker(agentId, 4, { timeoutMs: 3_600_000, takes: (p) => !('days' in p) }),
      2,
    );
    expect(taken.map((j) => j.id)).toEqual([first, last]);
    for (const job of taken) expect(job).toMatchObject({ workflowId: `workflow-of-${agentId}`, timeoutMs: 3_600_000 });
    expect(await t.repos.jobs.findById(refused.id)).toMatchObject({
      agentId: null,
      status: 'pending',
      timeoutMs: 60_000,
    });
  });
  it("puts a disconnected agent's pool jobs it has not started back in the pool, and no other job", async () => {
    const [handed, accepted, started] = (await waiting(3)) as [string, string, string];
    expect((await t.repos.pools.claim(taker(agentId, 4), 3)).map((j) => j.id)).toEqual([handed, accepted, started]);
    await t.exec(
      `UPDATE jobs SET status = 'queued', queued_at = '${AT}', deadline_at = '${AT}' WHERE id = '${accepted}'`,
    );
    await t.exec(`UPDATE jobs SET status = 'running', started_at = '${AT}' WHERE id = '${started}'`);
    // Its own job (a trigger of one agent) stays: no other agent may run it.
    const own = await insertJob(t, { orgId, agentId }, { workflowName: 'build', createdAt: AT, timeoutMs: null });
    // Connected again (its stream opened on another coordinator): nothing moves.
    expect(await t.repos.pools.release(agentId)).toEqual([]);

    expect(await t.repos.agents.markDisconnected(agentId, AT, AT)).toBe(true);
    const released = await t.other.pools.release(agentId);
    expect(released.map((j) => j.id).sort()).toEqual([handed, accepted].sort());
    for (const id of [handed, accepted]) {
      expect(await t.repos.jobs.findById(id)).toMatchObject({ agentId: null, status: 'pending', queuedAt: null });
    }
    expect(await t.repos.jobs.findById(started)).toMatchObject({ agentId, status: 'running' });
    expect(await t.repos.jobs.findById(own.id)).toMatchObject({ agentId, status: 'pending' });
    expect(await t.repos.pools.release(agentId)).toEqual([]);
    // Back in the pool: another agent takes them.
    const other = await enroll(t.repos, orgId, AT);
    expect((await t.repos.pools.claim(taker(other, 4), 4)).map((j) => j.id)).toEqual([handed, accepted]);
  });

  it('puts back the pool jobs of a trigger made a batch since (fanout all): they are still jobs of its pool', async () => {
    const [handed] = (await waiting(1)) as [string];
    expect((await t.repos.pools.claim(taker(agentId, 4), 1)).map((j) => j.id)).toEqual([handed]);
    await t.exec(`UPDATE triggers SET fanout = 'all' WHERE id = '${triggerId}'`);
    expect(await t.repos.agents.markDisconnected(agentId, AT, AT)).toBe(true);
    expect((await t.repos.pools.release(agentId)).map((j) => j.id)).toEqual([handed]);
    expect(await t.repos.jobs.findById(handed)).toMatchObject({ agentId: null, status: 'pending' });
  });
});

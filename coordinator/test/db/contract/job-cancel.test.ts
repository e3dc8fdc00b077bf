import { beforeEach, describe, expect, it } from 'vitest';
import { CANCEL_UNCONFIRMED_MESSAGE, CANCELLED_MESSAGE, DEADLINE_MESSAGE } from '../../../src/domain/jobs/job-state.js';
import type { FinishReport, NewJob } from '../../../src/domain/model/jobs.js';
import { logCap } from '../../../src/domain/jobs/job-logs.js';
import { newId } from '../../../src/util/ids.js';
import { DATABASES, databasesOfThisFile } from './databases.js';
import { insertJob as storeJob, orgWithAgent } from './fixture.js';

const T0 = Date.parse('2026-01-02T03:00:00.000Z');
const iso = (offsetMs: number) => new Date(T0 + offsetMs).toISOString();
const at = (offsetMs: number) => ({ at: iso(offsetMs), deadlineGraceMs: 1_000 });
/** A cancel at `offsetMs` whose agent must confirm within 70 s. */
const cancelAt = (offsetMs: number) => ({ at: iso(offsetMs), confirmBy: iso(offsetMs + 70_000) });
const databases = databasesOfThisFile();
const CAP = logCap(1 << 20);

describe.each(DATABASES)('job cancellation in the job repository (%s)', (kind) => {
  const t = databases.use(kind);
  const repos = () => t.repos;
  let orgId: string;
  let agentId: string;

  const insertJob = (fields: Partial<NewJob> = {}): Promise<NewJob> =>
    storeJob(t, { orgId, agentId }, { timeoutMs: 600_000, createdAt: iso(0), ...fields });
  const result = (fields: Partial<FinishReport> = {}): FinishReport => ({
    status: 'success',
    exitCode: 0,
    errorMessage: null,
    output: {},
    ...fields,
  });

  beforeEach(async () => {
    ({ orgId, agentId } = await orgWithAgent(t.repos, iso(0)));
  });

  it("lists the agents' open jobs in short, oldest first, with the cancels they have not confirmed", async () => {
    const running = await insertJob({ createdAt: iso(1) });
    const pending = await insertJob({ createdAt: iso(2) });
    const done = await insertJob({ createdAt: iso(3) });
    await repos().jobs.start(agentId, running.id, at(1_000));
    await repos().jobs.finish(agentId, done.id, result(), iso(1_000));
    expect((await repos().jobs.cancel(agentId, running.id, cancelAt(2_000))).outcome).toBe('applied');
    expect(await t.other.jobs.listOpenOfAgents([agentId, newId()])).toEqual([
      { id: running.id, agentId, status: 'running', createdAt: iso(1), cancelUnconfirmed: true },
      { id: pending.id, agentId, status: 'pending', createdAt: iso(2), cancelUnconfirmed: false },
    ]);
    expect(await repos().jobs.listOpenOfAgents([])).toEqual([]);
  });

  it('cancels a pending or a queued job at once, and never lets it start', async () => {
    const pending = await insertJob();
    const queued = await insertJob();
    await repos().jobs.accept(agentId, queued.id, at(1_000));
    for (const job of [pending, queued]) {
      const r = await repos().jobs.cancel(agentId, job.id, cancelAt(2_000));
      expect(r.outcome).toBe('applied');
      expect(r.job).toMatchObject({
        status: 'cancelled',
        errorMessage: CANCELLED_MESSAGE,
        finishedAt: iso(2_000),
        cancelRequestedAt: iso(2_000),
        cancelAckedAt: null,
      });
      expect((await repos().jobs.start(agentId, job.id, at(3_000))).outcome).toBe('conflict');
      expect((await repos().jobs.cancel(agentId, job.id, cancelAt(4_000))).outcome).toBe('conflict');
    }
  });

  it('records the cancel of a running job and brings its deadline forward; the status waits for the agent', async () => {
    const job = await insertJob();
    await repos().jobs.start(agentId, job.id, at(1_000));
    const r = await repos().jobs.cancel(agentId, job.id, cancelAt(2_000));
    expect(r.outcome).toBe('applied');
    expect(r.job).toMatchObject({ status: 'running', cancelRequestedAt: iso(2_000), deadlineAt: iso(72_000) });
    const again = await repos().jobs.cancel(agentId, job.id, cancelAt(3_000));
    expect(again.outcome).toBe('unchanged');
    expect(again.job?.cancelRequestedAt).toBe(iso(2_000));
    const done = await repos().jobs.finish(
      agentId,
      job.id,
      result({ status: 'cancelled', exitCode: null }),
      iso(5_000),
    );
    expect(done.outcome).toBe('applied');
    expect(done.job).toMatchObject({ status: 'cancelled', cancelAckedAt: iso(5_000) });
  });

  it('refuses to cancel a finished job', async () => {
    const job = await insertJob();
    await repos().jobs.finish(agentId, job.id, result(), iso(1_000));
    const r = await repos().jobs.cancel(agentId, job.id, cancelAt(2_000));
    expect(r.outcome).toBe('conflict');
    expect(r.job).toMatchObject({ status: 'success', cancelRequestedAt: null });
  });

  it('lets the first of a cancel and the agent finish win: a late result of a cancelled job is a harmless repeat', async () => {
    for (let round = 0; round < 2; round++) {
      const job = await insertJob();
      await repos().jobs.accept(agentId, job.id, at(1_000));
      // From two coordinators at once, in both orders of submission.
      const cancel = () => repos().jobs.cancel(agentId, job.id, cancelAt(2_000));
      const finish = () => t.other.jobs.finish(agentId, job.id, result(), iso(2_000));
      const [c, f] =
        round === 0 ? await Promise.all([cancel(), finish()]) : (await Promise.all([finish(), cancel()])).reverse();
      const stored = await repos().jobs.findById(job.id);
      if (c!.outcome === 'applied') {
        // The cancel first: the agent's result is a repeat that confirms it.
        expect(f!.outcome).toBe('unchanged');
        expect(stored).toMatchObject({ status: 'cancelled', cancelAckedAt: iso(2_000) });
      } else {
        expect([c!.outcome, f!.outcome]).toEqual(['conflict', 'applied']);
        expect(stored).toMatchObject({ status: 'success', cancelRequestedAt: null });
      }
    }
  });

  it('lists the cancels the agent has not confirmed until its first report about the ended job', async () => {
    const pending = await insertJob();
    const running = await insertJob();
    const untouched = await insertJob();
    await repos().jobs.start(agentId, running.id, at(1_000));
    await repos().jobs.cancel(agentId, pending.id, cancelAt(2_000));
    await repos().jobs.cancel(agentId, running.id, cancelAt(2_000));
    expect(await repos().jobs.listUnconfirmedCancels(agentId)).toEqual([pending.id, running.id]);
    // A log batch is no confirmation; a refused accept of the cancelled job is.
    await repos().jobs.appendLogs(agentId, running.id, [{ seq: 1, at: iso(3_000), stream: 'stdout', text: 'x' }], CAP);
    expect((await repos().jobs.accept(agentId, pending.id, at(3_000))).outcome).toBe('conflict');
    expect(await repos().jobs.listUnconfirmedCancels(agentId)).toEqual([running.id]);
    await repos().jobs.finish(agentId, running.id, result({ status: 'cancelled', exitCode: null }), iso(4_000));
    expect(await repos().jobs.listUnconfirmedCancels(agentId)).toEqual([]);
    expect((await repos().jobs.findById(untouched.id))?.cancelRequestedAt).toBeNull();
  });

  it('cancels a running job whose agent did not confirm by the deadline, before the deadline sweep could fail it', async () => {
    const job = await insertJob({ timeoutMs: 1_000 });
    await repos().jobs.start(agentId, job.id, at(0));
    const other = await insertJob({ timeoutMs: 1_000 });
    await repos().jobs.start(agentId, other.id, at(0));
    await repos().jobs.cancel(agentId, job.id, cancelAt(500));
    expect(await repos().jobs.cancelOverdue(iso(1_000), CANCEL_UNCONFIRMED_MESSAGE)).toEqual([]);
    expect(await repos().jobs.cancelOverdue(iso(60_000), CANCEL_UNCONFIRMED_MESSAGE)).toEqual([job.id]);
    expect(await repos().jobs.failOverdue(iso(60_000), DEADLINE_MESSAGE)).toEqual([other.id]);
    expect(await repos().jobs.findById(job.id)).toMatchObject({
      status: 'cancelled',
      errorMessage: CANCEL_UNCONFIRMED_MESSAGE,
      finishedAt: iso(60_000),
    });
    // The agent comes back later and confirms: its result is taken as a repeat.
    const late = await repos().jobs.finish(agentId, job.id, result({ status: 'cancelled' }), iso(90_000));
    expect(late.outcome).toBe('unchanged');
    expect(await repos().jobs.listUnconfirmedCancels(agentId)).toEqual([]);
  });

  it('numbers each organization’s jobs 1, 2, 3 in creation order, also when two coordinators create them at once', async () => {
    const other = await orgWithAgent(t.repos, iso(0));
    const owner = { orgId, agentId };
    await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        (i % 2 ? t.other : t.repos).triggerRuns.admit({
          job: {
            id: newId(),
            orgId: i % 3 === 0 ? other.orgId : owner.orgId,
            kind: 'trigger',
            source: 'webhook',
            triggerId: 'trigger-1',
            agentId: i % 3 === 0 ? other.agentId : owner.agentId,
            workflowId: 'workflow-1',
            workflowName: 'build',
            ref: null,
            debug: false,
            params: {},
            forced: false,
            forceReason: null,
            apiTokenId: null,
            userId: null,
            timeoutMs: null,
            createdAt: iso(i),
          },
          now: T0 + i,
          idempotency: null,
          token: null,
          workflowLimits: { perMinute: null, perHour: null, perDay: null },
        }),
      ),
    );
    await insertJob({ kind: 'update', triggerId: null });
    const numbers = async (org: string) =>
      (await repos().jobs.listTriggerJobs(org, { limit: 100 })).map((j) => j.number).sort((a, b) => a - b);
    expect(await numbers(owner.orgId)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(await numbers(other.orgId)).toEqual([1, 2, 3, 4]);
    const update = (await repos().jobs.listOpenForAgent(agentId)).jobs.find((j) => j.kind === 'update');
    expect(update?.number).toBe(9);
  });
});

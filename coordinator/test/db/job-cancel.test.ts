import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase, type Db } from '../../src/db/database.js';
import { migrate } from '../../src/db/migrate.js';
import { GroupCommitExecutor } from '../../src/db/writer/executor.js';
import { CANCEL_UNCONFIRMED_MESSAGE, CANCELLED_MESSAGE, DEADLINE_MESSAGE } from '../../src/domain/job-state.js';
import type { FinishReport, NewJob } from '../../src/domain/model/jobs.js';
import type { Repositories } from '../../src/domain/model/repositories.js';
import { createSqliteRepositories } from '../../src/sqlite-repositories.js';
import { newId } from '../../src/util/ids.js';
import { enrollAgent, insertJobRow } from './fixture.js';

const T0 = Date.parse('2026-01-02T03:00:00.000Z');
const iso = (offsetMs: number) => new Date(T0 + offsetMs).toISOString();
const at = (offsetMs: number) => ({ at: iso(offsetMs), deadlineGraceMs: 1_000 });
/** A cancel at `offsetMs` whose agent must confirm within 70 s. */
const cancelAt = (offsetMs: number) => ({ at: iso(offsetMs), confirmBy: iso(offsetMs + 70_000) });

describe('job cancellation in the job repository', () => {
  let db: Db;
  let repos: Repositories;
  let orgId: string;
  let agentId: string;

  const insertJob = (fields: Partial<NewJob> = {}): NewJob =>
    insertJobRow(db, { orgId, agentId }, { timeoutMs: 600_000, createdAt: iso(0), ...fields });
  const result = (fields: Partial<FinishReport> = {}): FinishReport => ({
    status: 'success',
    exitCode: 0,
    errorMessage: null,
    output: {},
    ...fields,
  });

  beforeEach(async () => {
    db = openDatabase(':memory:');
    migrate(db);
    repos = createSqliteRepositories(db, new GroupCommitExecutor(db));
    const userId = newId();
    await repos.users.insert({ id: userId, email: 'u@example.test', passwordHash: 'x', createdAt: iso(0) });
    orgId = newId();
    await repos.orgs.create({ id: orgId, name: 'acme', createdAt: iso(0) }, userId);
    agentId = await enrollAgent(repos, orgId, iso(0));
  });
  afterEach(() => db.close());

  it('cancels a pending or a queued job at once, and never lets it start', async () => {
    const pending = insertJob();
    const queued = insertJob();
    await repos.jobs.accept(agentId, queued.id, at(1_000));
    for (const job of [pending, queued]) {
      const r = await repos.jobs.cancel(agentId, job.id, cancelAt(2_000));
      expect(r.outcome).toBe('applied');
      expect(r.job).toMatchObject({
        status: 'cancelled',
        errorMessage: CANCELLED_MESSAGE,
        finishedAt: iso(2_000),
        cancelRequestedAt: iso(2_000),
        cancelAckedAt: null,
      });
      expect((await repos.jobs.start(agentId, job.id, at(3_000))).outcome).toBe('conflict');
      expect((await repos.jobs.cancel(agentId, job.id, cancelAt(4_000))).outcome).toBe('conflict');
    }
  });

  it('records the cancel of a running job and brings its deadline forward; the status waits for the agent', async () => {
    const job = insertJob();
    await repos.jobs.start(agentId, job.id, at(1_000));
    const r = await repos.jobs.cancel(agentId, job.id, cancelAt(2_000));
    expect(r.outcome).toBe('applied');
    expect(r.job).toMatchObject({ status: 'running', cancelRequestedAt: iso(2_000), deadlineAt: iso(72_000) });
    const again = await repos.jobs.cancel(agentId, job.id, cancelAt(3_000));
    expect(again.outcome).toBe('unchanged');
    expect(again.job?.cancelRequestedAt).toBe(iso(2_000));
    const done = await repos.jobs.finish(agentId, job.id, result({ status: 'cancelled', exitCode: null }), iso(5_000));
    expect(done.outcome).toBe('applied');
    expect(done.job).toMatchObject({ status: 'cancelled', cancelAckedAt: iso(5_000) });
  });

  it('refuses to cancel a finished job', async () => {
    const job = insertJob();
    await repos.jobs.finish(agentId, job.id, result(), iso(1_000));
    const r = await repos.jobs.cancel(agentId, job.id, cancelAt(2_000));
    expect(r.outcome).toBe('conflict');
    expect(r.job).toMatchObject({ status: 'success', cancelRequestedAt: null });
  });

  it('lets the first of a cancel and the agent finish win: a late result of a cancelled job is a harmless repeat', async () => {
    const cancelledFirst = insertJob();
    await repos.jobs.accept(agentId, cancelledFirst.id, at(1_000));
    const [c1, f1] = await Promise.all([
      repos.jobs.cancel(agentId, cancelledFirst.id, cancelAt(2_000)),
      repos.jobs.finish(agentId, cancelledFirst.id, result(), iso(2_000)),
    ]);
    expect([c1.outcome, f1.outcome]).toEqual(['applied', 'unchanged']);
    expect(f1.job).toMatchObject({ status: 'cancelled', cancelAckedAt: iso(2_000) });

    const finishedFirst = insertJob();
    await repos.jobs.accept(agentId, finishedFirst.id, at(1_000));
    const [f2, c2] = await Promise.all([
      repos.jobs.finish(agentId, finishedFirst.id, result(), iso(2_000)),
      repos.jobs.cancel(agentId, finishedFirst.id, cancelAt(2_000)),
    ]);
    expect([f2.outcome, c2.outcome]).toEqual(['applied', 'conflict']);
    expect(await repos.jobs.findById(finishedFirst.id)).toMatchObject({ status: 'success', cancelRequestedAt: null });
  });

  it('lists the cancels the agent has not confirmed until its first report about the ended job', async () => {
    const pending = insertJob();
    const running = insertJob();
    const untouched = insertJob();
    await repos.jobs.start(agentId, running.id, at(1_000));
    await repos.jobs.cancel(agentId, pending.id, cancelAt(2_000));
    await repos.jobs.cancel(agentId, running.id, cancelAt(2_000));
    expect(await repos.jobs.listUnconfirmedCancels(agentId)).toEqual([pending.id, running.id]);
    // A log batch is no confirmation; a refused accept of the cancelled job is.
    await repos.jobs.appendLogs(agentId, running.id, [{ seq: 1, at: iso(3_000), stream: 'stdout', text: 'x' }]);
    expect((await repos.jobs.accept(agentId, pending.id, at(3_000))).outcome).toBe('conflict');
    expect(await repos.jobs.listUnconfirmedCancels(agentId)).toEqual([running.id]);
    await repos.jobs.finish(agentId, running.id, result({ status: 'cancelled', exitCode: null }), iso(4_000));
    expect(await repos.jobs.listUnconfirmedCancels(agentId)).toEqual([]);
    expect((await repos.jobs.findById(untouched.id))?.cancelRequestedAt).toBeNull();
  });

  it('cancels a running job whose agent did not confirm by the deadline, before the deadline sweep could fail it', async () => {
    const job = insertJob({ timeoutMs: 1_000 });
    await repos.jobs.start(agentId, job.id, at(0));
    const other = insertJob({ timeoutMs: 1_000 });
    await repos.jobs.start(agentId, other.id, at(0));
    await repos.jobs.cancel(agentId, job.id, cancelAt(500));
    expect(await repos.jobs.cancelOverdue(iso(1_000), CANCEL_UNCONFIRMED_MESSAGE)).toEqual([]);
    expect(await repos.jobs.cancelOverdue(iso(60_000), CANCEL_UNCONFIRMED_MESSAGE)).toEqual([job.id]);
    expect(await repos.jobs.failOverdue(iso(60_000), DEADLINE_MESSAGE)).toEqual([other.id]);
    expect(await repos.jobs.findById(job.id)).toMatchObject({
      status: 'cancelled',
      errorMessage: CANCEL_UNCONFIRMED_MESSAGE,
      finishedAt: iso(60_000),
    });
    // The agent comes back later and confirms: its result is taken as a repeat.
    const late = await repos.jobs.finish(agentId, job.id, result({ status: 'cancelled' }), iso(90_000));
    expect(late.outcome).toBe('unchanged');
    expect(await repos.jobs.listUnconfirmedCancels(agentId)).toEqual([]);
  });
});

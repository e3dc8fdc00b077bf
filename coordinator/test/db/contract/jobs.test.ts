import { beforeEach, describe, expect, it } from 'vitest';
import { DEADLINE_MESSAGE } from '../../../src/domain/job-state.js';
import type { FinishReport, JobListQuery, NewJob } from '../../../src/domain/model/jobs.js';
import { newId } from '../../../src/util/ids.js';
import { DATABASES, databasesOfThisFile } from './databases.js';
import { enroll as enrollAgent, insertJob as storeJob, orgWithAgent } from './fixture.js';

const T0 = Date.parse('2026-01-02T03:00:00.000Z');
const iso = (offsetMs: number) => new Date(T0 + offsetMs).toISOString();
const GRACE = 1_000;
const at = (offsetMs: number) => ({ at: iso(offsetMs), deadlineGraceMs: GRACE });
const databases = databasesOfThisFile();

describe.each(DATABASES)('job repository (%s)', (kind) => {
  const t = databases.use(kind);
  const repos = () => t.repos;
  let orgId: string;
  let agentId: string;
  let otherAgentId: string;

  const insertJob = (fields: Partial<NewJob> = {}): Promise<NewJob> =>
    storeJob(t, { orgId, agentId }, { timeoutMs: 10_000, createdAt: iso(0), ...fields });

  const result = (fields: Partial<FinishReport> = {}): FinishReport => ({
    status: 'success',
    exitCode: 0,
    errorMessage: null,
    output: { version: '1.2.3' },
    ...fields,
  });

  beforeEach(async () => {
    ({ orgId, agentId } = await orgWithAgent(t.repos, iso(0)));
    // The agents start as enrolled (pending): the deadline sweep case connects one itself.
    await t.repos.agents.markDisconnected(agentId, null, iso(0));
    otherAgentId = await enrollAgent(t.repos, orgId, iso(0));
  });

  describe('transitions', () => {
    it('accepts a pending job, recording when it was queued and its deadline', async () => {
      const job = await insertJob();
      const r = await repos().jobs.accept(agentId, job.id, at(5_000));
      expect(r.outcome).toBe('applied');
      expect(r.job).toMatchObject({ status: 'queued', queuedAt: iso(5_000), deadlineAt: iso(5_000 + 10_000 + GRACE) });
      const again = await repos().jobs.accept(agentId, job.id, at(6_000));
      expect(again.outcome).toBe('unchanged');
      expect(again.job?.queuedAt).toBe(iso(5_000));
    });

    it('starts a queued job, moving its deadline to start plus timeout plus grace', async () => {
      const job = await insertJob();
      await repos().jobs.accept(agentId, job.id, at(1_000));
      const r = await repos().jobs.start(agentId, job.id, at(20_000));
      expect(r.outcome).toBe('applied');
      expect(r.job).toMatchObject({ status: 'running', startedAt: iso(20_000), deadlineAt: iso(31_000) });
      expect((await repos().jobs.accept(agentId, job.id, at(21_000))).outcome).toBe('unchanged');
      expect((await repos().jobs.start(agentId, job.id, at(21_000))).outcome).toBe('unchanged');
    });

    it('starts a pending job directly, leaving queuedAt empty', async () => {
      const job = await insertJob({ timeoutMs: null });
      const r = await repos().jobs.start(agentId, job.id, at(1_000));
      expect(r.job).toMatchObject({ status: 'running', queuedAt: null, startedAt: iso(1_000), deadlineAt: null });
    });

    it('rejects a pending job with its message and finish time, and nothing else', async () => {
      const job = await insertJob();
      const r = await repos().jobs.reject(agentId, job.id, 'queue full', iso(1_000));
      expect(r.job).toMatchObject({ status: 'rejected', errorMessage: 'queue full', finishedAt: iso(1_000) });
      expect((await repos().jobs.reject(agentId, job.id, 'queue full', iso(2_000))).outcome).toBe('unchanged');
      expect((await repos().jobs.accept(agentId, job.id, at(2_000))).outcome).toBe('conflict');
      expect((await repos().jobs.start(agentId, job.id, at(2_000))).outcome).toBe('conflict');
      expect((await repos().jobs.finish(agentId, job.id, result(), iso(2_000))).outcome).toBe('conflict');
      const queued = await insertJob();
      await repos().jobs.accept(agentId, queued.id, at(0));
      expect((await repos().jobs.reject(agentId, queued.id, 'x', iso(1))).outcome).toBe('conflict');
    });

    it("answers not_found for another agent's job and for an unknown one", async () => {
      const job = await insertJob();
      expect((await repos().jobs.accept(otherAgentId, job.id, at(0))).outcome).toBe('not_found');
      expect((await repos().jobs.finish(otherAgentId, job.id, result(), iso(0))).outcome).toBe('not_found');
      expect((await repos().jobs.start(agentId, newId(), at(0))).outcome).toBe('not_found');
      expect(await repos().jobs.appendLogs(otherAgentId, job.id, [])).toBeNull();
      expect((await repos().jobs.findById(job.id))?.status).toBe('pending');
    });

    it('finishes a job with its result, exit code and output', async () => {
      const job = await insertJob();
      await repos().jobs.start(agentId, job.id, at(1_000));
      const r = await repos().jobs.finish(agentId, job.id, result(), iso(2_000));
      expect(r.outcome).toBe('applied');
      expect(r.job).toMatchObject({
        status: 'success',
        exitCode: 0,
        errorMessage: null,
        output: { version: '1.2.3' },
        finishedAt: iso(2_000),
      });
    });

    it("keeps the agent's earlier finish instant for a result sent late", async () => {
      const job = await insertJob();
      const r = await repos().jobs.finish(agentId, job.id, result({ finishedAt: iso(500) }), iso(60_000));
      expect(r.job?.finishedAt).toBe(iso(500));
    });
  });

  describe('exactly one terminal status', () => {
    it('applies one of many conflicting finishes sent at once, and refuses the others', async () => {
      const job = await insertJob();
      await repos().jobs.start(agentId, job.id, at(0));
      const outcomes = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          repos().jobs.finish(agentId, job.id, result({ status: i % 2 ? 'failed' : 'success', exitCode: i }), iso(1)),
        ),
      );
      const applied = outcomes.filter((o) => o.outcome === 'applied');
      expect(applied).toHaveLength(1);
      expect(outcomes.filter((o) => o.outcome === 'conflict')).toHaveLength(19);
      const stored = await repos().jobs.findById(job.id);
      expect(stored).toMatchObject({ status: applied[0]!.job!.status, exitCode: applied[0]!.job!.exitCode });
    });

    it('applies a repeated finish once and answers the repeats unchanged', async () => {
      const job = await insertJob();
      const outcomes = await Promise.all(
        Array.from({ length: 10 }, () => repos().jobs.finish(agentId, job.id, result(), iso(1))),
      );
      expect(outcomes.map((o) => o.outcome).sort()).toEqual(['applied', ...Array(9).fill('unchanged')]);
    });

    it('lets either the deadline sweep or the finish win, never both', async () => {
      const job = await insertJob({ timeoutMs: 1_000 });
      await repos().jobs.start(agentId, job.id, at(0));
      const [swept, finished] = await Promise.all([
        t.other.jobs.failOverdue(iso(60_000), DEADLINE_MESSAGE),
        repos().jobs.finish(agentId, job.id, result(), iso(60_000)),
      ]);
      const stored = await repos().jobs.findById(job.id);
      if (swept.length === 1) {
        // On SQLite, submitted in one turn: the sweep runs first in the batch.
        expect(finished.outcome).toBe('conflict');
        expect(stored).toMatchObject({ status: 'failed', errorMessage: DEADLINE_MESSAGE });
      } else {
        expect(finished.outcome).toBe('applied');
        expect(stored?.status).toBe('success');
      }
      expect(await repos().jobs.failOverdue(iso(120_000), DEADLINE_MESSAGE)).toEqual([]);
    });
  });

  describe('deadline sweep', () => {
    it('fails running jobs past their deadline, and queued ones only when their agent is not connected', async () => {
      const running = await insertJob({ timeoutMs: 1_000 });
      await repos().jobs.start(agentId, running.id, at(0));
      const runningInTime = await insertJob({ timeoutMs: 100_000 });
      await repos().jobs.start(agentId, runningInTime.id, at(0));
      const queued = await insertJob({ timeoutMs: 1_000 });
      await repos().jobs.accept(agentId, queued.id, at(0));
      const queuedOther = await insertJob({ agentId: otherAgentId, timeoutMs: 1_000 });
      await repos().jobs.accept(otherAgentId, queuedOther.id, at(0));
      const noTimeout = await insertJob({ timeoutMs: null });
      await repos().jobs.start(agentId, noTimeout.id, at(0));
      const pending = await insertJob({ timeoutMs: 1_000 });
      await repos().agents.markConnected(agentId, iso(0));

      const failed = await repos().jobs.failOverdue(iso(10_000), DEADLINE_MESSAGE);
      expect(failed.sort()).toEqual([running.id, queuedOther.id].sort());
      expect(await repos().jobs.findById(running.id)).toMatchObject({
        status: 'failed',
        errorMessage: DEADLINE_MESSAGE,
        finishedAt: iso(10_000),
        exitCode: null,
      });
      for (const j of [runningInTime, queued, noTimeout]) {
        expect((await repos().jobs.findById(j.id))?.status).not.toBe('failed');
      }
      expect((await repos().jobs.findById(pending.id))?.status).toBe('pending');

      await repos().agents.markDisconnected(agentId, iso(10_000), iso(10_000));
      expect(await repos().jobs.failOverdue(iso(10_001), DEADLINE_MESSAGE)).toEqual([queued.id]);
    });

    it('fails every open job of an agent, leaving finished ones', async () => {
      const a = await insertJob();
      const b = await insertJob();
      await repos().jobs.start(agentId, b.id, at(0));
      const done = await insertJob();
      await repos().jobs.finish(agentId, done.id, result(), iso(0));
      const other = await insertJob({ agentId: otherAgentId });
      const failed = await repos().jobs.failOpenOfAgent(agentId, 'revoked', iso(5));
      expect(failed.sort()).toEqual([a.id, b.id].sort());
      expect((await repos().jobs.findById(done.id))?.status).toBe('success');
      expect((await repos().jobs.findById(other.id))?.status).toBe('pending');
    });
  });

  describe('logs', () => {
    it('stores lines once per seq, in any status, and lists them in seq order', async () => {
      const job = await insertJob();
      const line = (seq: number, text = `line ${seq}`) => ({ seq, at: iso(seq), stream: 'stdout' as const, text });
      expect((await repos().jobs.appendLogs(agentId, job.id, [line(2), line(1)]))?.accepted).toBe(2);
      expect((await repos().jobs.appendLogs(agentId, job.id, [line(2, 'changed'), line(3)]))?.accepted).toBe(1);
      await repos().jobs.finish(agentId, job.id, result(), iso(10));
      expect(
        (await repos().jobs.appendLogs(agentId, job.id, [{ ...line(4), stream: 'system', step: 0 }]))?.accepted,
      ).toBe(1);
      const logs = await repos().jobs.listLogs(job.id, 0, 100);
      expect(logs.map((l) => [l.seq, l.text, l.step])).toEqual([
        [1, 'line 1', null],
        [2, 'line 2', null],
        [3, 'line 3', null],
        [4, 'line 4', 0],
      ]);
      expect((await repos().jobs.listLogs(job.id, 2, 1)).map((l) => l.seq)).toEqual([3]);
    });
  });

  describe('reads', () => {
    it('reads many jobs by id at once, the unknown ones left out', async () => {
      const a = await insertJob();
      const b = await insertJob({ agentId: otherAgentId, kind: 'update', triggerId: null });
      const found = await repos().jobs.findByIds([b.id, newId(), a.id, a.id]);
      expect(found.map((j) => j.id).sort()).toEqual([a.id, b.id].sort());
      expect(found.find((j) => j.id === b.id)).toEqual(await repos().jobs.findById(b.id));
      expect(await repos().jobs.findByIds([])).toEqual([]);
    });

    it('lists trigger jobs newest first with filters and a cursor, never update jobs', async () => {
      const a = await insertJob({ triggerId: 't1' });
      const b = await insertJob({ triggerId: 't2', status: 'rejected', errorMessage: 'limit' });
      await insertJob({ kind: 'update', triggerId: null });
      const c = await insertJob({ triggerId: 't1' });
      const seqOf = async (id: string) => (await repos().jobs.findById(id))!.seq;
      const ids = async (q: JobListQuery) => (await repos().jobs.listTriggerJobs(orgId, q)).map((j) => j.id);
      expect(await ids({ limit: 10 })).toEqual([c.id, b.id, a.id]);
      expect(await ids({ limit: 10, triggerId: 't1' })).toEqual([c.id, a.id]);
      expect(await ids({ limit: 10, status: 'rejected' })).toEqual([b.id]);
      expect(await ids({ limit: 10, status: 'pending', triggerId: 't2' })).toEqual([]);
      expect(await ids({ limit: 1, beforeSeq: await seqOf(c.id) })).toEqual([b.id]);
      expect(await repos().jobs.listTriggerJobs(newId(), { limit: 10 })).toEqual([]);
    });

    it('filters by a creation time range exactly, also when creation times are out of order', async () => {
      // Inserted in this order (seq), created at these minutes: the clock stepped back once.
      const minutes = [0, 10, 20, 5, 30, 25, 40];
      const jobs: NewJob[] = [];
      for (const m of minutes) jobs.push(await insertJob({ createdAt: iso(m * 60_000) }));
      await insertJob({ kind: 'update', triggerId: null, createdAt: iso(15 * 60_000) });
      const ids = async (q: JobListQuery) =>
        (await repos().jobs.listTriggerJobs(orgId, q)).map((j) => minutes[jobs.findIndex((x) => x.id === j.id)]);
      const t = (m: number) => iso(m * 60_000);
      expect(await ids({ limit: 10, createdBefore: t(10) })).toEqual([5, 0]);
      expect(await ids({ limit: 10, createdAfter: t(20) })).toEqual([40, 25, 30, 20]);
      expect(await ids({ limit: 10, createdAfter: t(5), createdBefore: t(26) })).toEqual([25, 5, 20, 10]);
      expect(await ids({ limit: 10, createdAfter: t(41) })).toEqual([]);
      expect(await ids({ limit: 10, createdBefore: t(0) })).toEqual([]);
      // Paging within a range.
      const seq = (await repos().jobs.findById(jobs[5]!.id))!.seq;
      expect(await ids({ limit: 2, createdAfter: t(5), createdBefore: t(26), beforeSeq: seq })).toEqual([5, 20]);
    });

    it("lists an agent's open jobs oldest first", async () => {
      const a = await insertJob();
      const b = await insertJob();
      const c = await insertJob();
      await insertJob({ agentId: otherAgentId });
      await repos().jobs.start(agentId, a.id, at(0));
      await repos().jobs.finish(agentId, b.id, result(), iso(0));
      expect((await repos().jobs.listOpenForAgent(agentId)).map((j) => [j.id, j.status])).toEqual([
        [a.id, 'running'],
        [c.id, 'pending'],
      ]);
    });

    it('finds a job only in its own organization', async () => {
      const job = await insertJob();
      expect((await repos().jobs.findInOrg(orgId, job.id))?.id).toBe(job.id);
      expect(await repos().jobs.findInOrg(newId(), job.id)).toBeNull();
    });
  });
});

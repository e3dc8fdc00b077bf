import fs from 'node:fs';
import { beforeEach, describe, expect, it } from 'vitest';
import { DEADLINE_MESSAGE } from '../../../src/domain/jobs/job-state.js';
import { logCap } from '../../../src/domain/jobs/job-logs.js';
import type { FinishReport, JobListQuery, NewJob, NewLogLine } from '../../../src/domain/model/jobs.js';
import { newId } from '../../../src/util/ids.js';
import { DamagedColumnError } from '../../../src/util/json.js';
import { DATABASES, databasesOfThisFile } from './databases.js';
import { enroll as enrollAgent, insertJob as storeJob, orgWithAgent } from './fixture.js';

const T0 = Date.parse('2026-01-02T03:00:00.000Z');
const iso = (offsetMs: number) => new Date(T0 + offsetMs).toISOString();
const GRACE = 1_000;
const at = (offsetMs: number) => ({ at: iso(offsetMs), deadlineGraceMs: GRACE });
const databases = databasesOfThisFile();
const CAP = logCap(1 << 20);
/** A page of a log as big as any. */
const ALL = { afterSeq: 0, limit: 100_000, maxBytes: 1 << 30 };

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
      expect((await repos().jobs.appendLogs(otherAgentId, job.id, [], CAP)).outcome).toBe('not_found');
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

    it('fails the open jobs of revoked agents, stored after their revocation, and no other', async () => {
      await repos().agents.revoke(orgId, agentId, iso(1));
      const late = await insertJob();
      const done = await insertJob();
      await repos().jobs.finish(agentId, done.id, result(), iso(0));
      const other = await insertJob({ agentId: otherAgentId });
      expect(await repos().jobs.failOpenOfRevoked('revoked', iso(5))).toEqual([late.id]);
      expect(await repos().jobs.findById(late.id)).toMatchObject({
        status: 'failed',
        errorMessage: 'revoked',
        finishedAt: iso(5),
      });
      expect((await repos().jobs.findById(done.id))?.status).toBe('success');
      expect((await repos().jobs.findById(other.id))?.status).toBe('pending');
      expect(await repos().jobs.failOpenOfRevoked('revoked', iso(6))).toEqual([]);
    });
  });

  describe('logs', () => {
    const line = (seq: number, text = `line ${seq}`): NewLogLine => ({ seq, at: iso(seq), stream: 'stdout', text });
    const accepted = async (jobId: string, lines: NewLogLine[], cap = CAP) => {
      const r = await repos().jobs.appendLogs(agentId, jobId, lines, cap);
      return r.outcome === 'stored' ? r.accepted : r.outcome;
    };
    const stored = async (jobId: string) => (await repos().jobs.listLogs(jobId, ALL)).lines;

    it('stores lines once per seq while the job is open and lists them in seq order', async () => {
      const job = await insertJob();
      expect(await accepted(job.id, [line(2), line(1)])).toBe(2);
      await repos().jobs.start(agentId, job.id, at(1));
      expect(await accepted(job.id, [line(2, 'changed'), line(3), { ...line(4), stream: 'system', step: 0 }])).toBe(2);
      expect((await stored(job.id)).map((l) => [l.seq, l.text, l.step])).toEqual([
        [1, 'line 1', null],
        [2, 'line 2', null],
        [3, 'line 3', null],
        [4, 'line 4', 0],
      ]);
      expect(await repos().jobs.logSummary(job.id)).toEqual({ lines: 4, bytes: 24, droppedLines: 0, droppedBytes: 0 });
      expect(await repos().jobs.logSummary(newId())).toEqual({ lines: 0, bytes: 0, droppedLines: 0, droppedBytes: 0 });
    });

    it('stores any text as sent, the first of a seq sent twice in one batch, a lone surrogate as U+FFFD', async () => {
      const job = await insertJob();
      const text = `"quoted" \\ back\\slash\nnew line\ttab \u0001 \u007f é 日本 😀 {"json": [1]}`;
      const batch = [line(1, text), line(2, 'first'), line(2, 'second'), line(3, 'lone \ud800 surrogate')];
      expect(await accepted(job.id, batch)).toBe(3);
      expect((await stored(job.id)).map((l) => l.text)).toEqual([text, 'first', 'lone \ufffd surrogate']);
      const bytes = [text, 'first', 'lone \ufffd surrogate'].reduce((sum, s) => sum + Buffer.byteLength(s), 0);
      expect(await repos().jobs.logSummary(job.id)).toMatchObject({ lines: 3, bytes });
    });

    it("counts the logs stored before the cap's migration as that migration does", async () => {
      const job = await insertJob();
      await accepted(job.id, [line(1, 'é'), line(2, '日本'), line(3)]);
      const summary = await repos().jobs.logSummary(job.id);
      expect(summary).toEqual({ lines: 3, bytes: 2 + 6 + 6, droppedLines: 0, droppedBytes: 0 });
      const file = kind === 'sqlite' ? '0021_job_log_cap.sql' : 'postgres/0003_job_log_cap.sql';
      const sql = fs.readFileSync(new URL(`../../../migrations/${file}`, import.meta.url), 'utf8');
      const backfill = sql.slice(sql.indexOf('INSERT INTO job_log_usage'));
      await t.exec('DELETE FROM job_log_usage');
      expect(await repos().jobs.logSummary(job.id)).toMatchObject({ lines: 0 });
      await t.exec(backfill);
      expect(await repos().jobs.logSummary(job.id)).toEqual(summary);
    });

    it('refuses the lines of a job that ended, storing none of them', async () => {
      const job = await insertJob();
      await repos().jobs.start(agentId, job.id, at(1));
      expect(await accepted(job.id, [line(1)])).toBe(1);
      await repos().jobs.finish(agentId, job.id, result(), iso(10));
      const late = await repos().jobs.appendLogs(agentId, job.id, [line(1), line(2)], CAP);
      expect(late).toMatchObject({ outcome: 'ended', job: { id: job.id, status: 'success' } });
      expect((await stored(job.id)).map((l) => l.seq)).toEqual([1]);
      const cancelled = await insertJob();
      await repos().jobs.cancel(agentId, cancelled.id, { at: iso(1), confirmBy: iso(2) });
      expect(await accepted(cancelled.id, [line(1)])).toBe('ended');
      expect(await repos().jobs.logSummary(cancelled.id)).toMatchObject({ lines: 0 });
    });

    it('pages the log by lines and by bytes, saying whether more lines follow', async () => {
      const job = await insertJob();
      await accepted(
        job.id,
        [1, 2, 3, 4, 5].map((seq) => line(seq, `${seq}`.repeat(10))),
      );
      const page = (afterSeq: number, limit: number, maxBytes = 1 << 20) =>
        repos().jobs.listLogs(job.id, { afterSeq, limit, maxBytes });
      const seqs = async (afterSeq: number, limit: number, maxBytes?: number) => {
        const p = await page(afterSeq, limit, maxBytes);
        return [p.lines.map((l) => l.seq), p.more];
      };
      expect(await seqs(0, 2)).toEqual([[1, 2], true]);
      expect(await seqs(2, 2)).toEqual([[3, 4], true]);
      expect(await seqs(4, 2)).toEqual([[5], false]);
      expect(await seqs(5, 2)).toEqual([[], false]);
      // 10 bytes a line: a page of 25 bytes holds two; a page always holds one, whatever its size.
      expect(await seqs(0, 100, 25)).toEqual([[1, 2], true]);
      expect(await seqs(0, 100, 5)).toEqual([[1], true]);
      expect(await seqs(0, 100, 50)).toEqual([[1, 2, 3, 4, 5], false]);
      // No lines: only whether there are any after afterSeq.
      expect(await seqs(0, 0)).toEqual([[], true]);
      expect(await seqs(5, 0)).toEqual([[], false]);
      expect((await page(0, 2)).lines[0]).toEqual({
        seq: 1,
        at: iso(1),
        stream: 'stdout',
        step: null,
        text: '1'.repeat(10),
      });
    });

    describe('past the cap', () => {
      // 100 bytes a line; a cap of 4,000 bytes keeps a head of 1,000 (10 lines) and the newest lines.
      const cap = logCap(4_000);
      const hundred = (seq: number) => line(seq, `line ${seq} `.padEnd(100, '.'));
      const batch = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => hundred(from + i));
      const gapLines = <L extends { stream: string; text: string }>(lines: L[]) =>
        lines.filter((l) => l.stream === 'system' && l.text.includes('dropped here'));

      /** What is stored agrees with the counts, within the cap, in seq order. */
      const consistent = async (jobId: string) => {
        const lines = await stored(jobId);
        const summary = await repos().jobs.logSummary(jobId);
        expect(summary.lines).toBe(lines.length);
        expect(summary.bytes).toBe(lines.reduce((sum, l) => sum + Buffer.byteLength(l.text), 0));
        expect(summary.bytes).toBeLessThanOrEqual(cap.maxBytes);
        expect(lines.map((l) => l.seq)).toEqual([...lines.map((l) => l.seq)].sort((a, b) => a - b));
        return { lines, summary };
      };

      it('keeps the head and the newest lines, one line in the gap counting what was dropped', async () => {
        const job = await insertJob();
        await repos().jobs.start(agentId, job.id, at(1));
        for (let from = 1; from <= 60; from += 10) expect(await accepted(job.id, batch(from, from + 9), cap)).toBe(10);
        const { lines, summary } = await consistent(job.id);
        const gap = gapLines(lines);
        expect(gap).toHaveLength(1);
        const gapAt = lines.indexOf(gap[0]!);
        // The head: lines 1 to 10 (1,000 bytes); the newest lines, up to 60, follow the gap's line.
        expect(lines.slice(0, gapAt).map((l) => l.seq)).toEqual(batch(1, 10).map((l) => l.seq));
        const tail = lines.slice(gapAt + 1).map((l) => l.seq);
        expect(tail.at(-1)).toBe(60);
        expect(tail).toEqual(batch(tail[0]!, 60).map((l) => l.seq));
        expect(gap[0]!.seq).toBe(tail[0]! - 1);
        expect(summary.droppedLines).toBe(60 - 10 - tail.length);
        expect(summary.droppedBytes).toBe(summary.droppedLines * 100);
        expect(gap[0]!.text).toBe(cap.gapText({ lines: summary.droppedLines, bytes: summary.droppedBytes }));
        expect(gap[0]!.text).toMatch(new RegExp(`^\\[drover\\] ${summary.droppedLines} lines \\(.+\\) dropped here`));
        expect(gap[0]!.at).toBe(iso(gap[0]!.seq));
        // Lines of the middle sent again (an agent's resend) stay dropped; the stored ones stay once.
        expect(await accepted(job.id, batch(11, 20), cap)).toBe(0);
        expect(await accepted(job.id, batch(51, 60), cap)).toBe(0);
        expect((await consistent(job.id)).lines).toEqual(lines);
      });

      it('caps the number of lines too, so that empty or one-byte lines cannot pile up rows without end', async () => {
        // 4,000 bytes of text allow 250 lines (a head of 62); empty lines have no bytes for the byte cap to count.
        const job = await insertJob();
        await repos().jobs.start(agentId, job.id, at(1));
        const empty = (from: number) => Array.from({ length: 100 }, (_, i) => line(from + i, ''));
        for (let from = 1; from <= 1_000; from += 100) await accepted(job.id, empty(from), cap);
        const lines = await stored(job.id);
        const summary = await repos().jobs.logSummary(job.id);
        expect(summary.lines).toBe(lines.length);
        expect(lines.length).toBeLessThanOrEqual(250);
        // The head (a quarter of the lines), the gap's line, the newest lines up to 1,000.
        expect(lines.slice(0, 62).map((l) => l.seq)).toEqual(
          empty(1)
            .slice(0, 62)
            .map((l) => l.seq),
        );
        expect(lines[62]).toMatchObject({ stream: 'system', text: expect.stringContaining('dropped here') });
        expect(gapLines(lines)).toHaveLength(1);
        expect(lines.at(-1)!.seq).toBe(1_000);
        expect(summary.droppedLines + summary.lines - 1).toBe(1_000);
      });

      it("moves the gap's line to the newest dropped line as more are dropped, and pages across it", async () => {
        const job = await insertJob();
        await repos().jobs.start(agentId, job.id, at(1));
        await accepted(job.id, batch(1, 50), cap);
        const first = await consistent(job.id);
        for (let from = 51; from <= 200; from += 25) await accepted(job.id, batch(from, from + 24), cap);
        const { lines, summary } = await consistent(job.id);
        const gap = gapLines(lines);
        expect(gap).toHaveLength(1);
        expect(gap[0]!.seq).toBeGreaterThan(gapLines(first.lines)[0]!.seq);
        expect(lines.filter((l) => l.seq <= 10)).toHaveLength(10);
        expect(summary.droppedLines + summary.lines - 1).toBe(200);
        // Pages of 7 lines, each from the last seq read, give every stored line once, in order.
        const read: number[] = [];
        for (let afterSeq = 0, more = true; more;) {
          const page = await repos().jobs.listLogs(job.id, { afterSeq, limit: 7, maxBytes: 1 << 20 });
          read.push(...page.lines.map((l) => l.seq));
          more = page.more;
          afterSeq = page.lines.at(-1)?.seq ?? afterSeq;
        }
        expect(read).toEqual(lines.map((l) => l.seq));
      });

      it('cuts a single batch larger than the whole cap, keeping its newest lines', async () => {
        const job = await insertJob();
        await repos().jobs.start(agentId, job.id, at(1));
        expect(await accepted(job.id, batch(1, 100), cap)).toBe(100);
        const { lines, summary } = await consistent(job.id);
        expect(lines.at(-1)!.seq).toBe(100);
        expect(gapLines(lines)).toHaveLength(1);
        expect(summary.droppedLines).toBeGreaterThan(60);
      });

      it('counts exactly when batches of one job reach two coordinators at once', async () => {
        const job = await insertJob();
        await repos().jobs.start(agentId, job.id, at(1));
        const sends = [];
        for (let from = 1; from <= 200; from += 10) {
          const via = from % 20 === 1 ? t.repos : t.other;
          sends.push(via.jobs.appendLogs(agentId, job.id, batch(from, from + 9), cap));
        }
        // In any order: a batch that lands in the gap an earlier-sent later one made is ignored.
        const accepts = (await Promise.all(sends)).map((r) => (r.outcome === 'stored' ? r.accepted : 0));
        const { lines, summary } = await consistent(job.id);
        expect(gapLines(lines)).toHaveLength(1);
        expect(summary.droppedLines + summary.lines - 1).toBe(accepts.reduce((a, b) => a + b, 0));
      });
    });
  });

  describe('reads', () => {
    it('reads many jobs by id at once, the unknown ones left out', async () => {
      const a = await insertJob();
      const b = await insertJob({ agentId: otherAgentId, kind: 'update', triggerId: null });
      const { jobs: found, damaged } = await repos().jobs.findByIds([b.id, newId(), a.id, a.id]);
      expect(found.map((j) => j.id).sort()).toEqual([a.id, b.id].sort());
      expect(found.find((j) => j.id === b.id)).toEqual(await repos().jobs.findById(b.id));
      expect(damaged).toEqual([]);
      expect(await repos().jobs.findByIds([])).toEqual({ jobs: [], damaged: [] });
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
      const listed = await repos().jobs.listOpenForAgent(agentId);
      expect(listed.jobs.map((j) => [j.id, j.status])).toEqual([
        [a.id, 'running'],
        [c.id, 'pending'],
      ]);
      expect(listed.damaged).toEqual([]);
    });

    // Only a SQLite file can hold one: PostgreSQL's columns are of type json.
    it.skipIf(kind === 'postgres')(
      "leaves out of an agent's open jobs, and of jobs read by id, one whose row does not parse (a damaged database), naming it",
      async () => {
        const a = await insertJob();
        const b = await insertJob();
        const c = await insertJob();
        await t.exec(`UPDATE jobs SET params = '{"x":' WHERE id = '${b.id}'`);
        const listed = await repos().jobs.listOpenForAgent(agentId);
        expect(listed.jobs.map((j) => j.id)).toEqual([a.id, c.id]);
        expect(listed.damaged).toEqual([{ id: b.id, column: 'jobs.params', error: expect.any(DamagedColumnError) }]);
        // Read by id with others (a stream's sends, a batch's progress), it leaves them be.
        const read = await repos().jobs.findByIds([a.id, b.id, c.id]);
        expect(read.jobs.map((j) => j.id).sort()).toEqual([a.id, c.id].sort());
        expect(read.damaged).toEqual([{ id: b.id, column: 'jobs.params', error: expect.any(DamagedColumnError) }]);
      },
    );

    it("counts the overview's trigger jobs by hour of creation and status, and lists the running and the last failures", async () => {
      const m = (minutes: number) => iso(minutes * 60_000); // from 03:00
      const finish = async (job: NewJob, status: FinishReport['status'], minutes: number) =>
        repos().jobs.finish(agentId, job.id, result({ status, exitCode: null }), m(minutes));
      const ok = await insertJob({ createdAt: m(10) });
      const failedEarly = await insertJob({ createdAt: m(50) });
      const failedLate = await insertJob({ createdAt: m(65) });
      const timedOut = await insertJob({ createdAt: m(80) });
      const running = await insertJob({ createdAt: m(90) });
      const runningLater = await insertJob({ createdAt: m(95), agentId: otherAgentId });
      await insertJob({ createdAt: m(100) }); // pending
      const update = await insertJob({ createdAt: m(70), kind: 'update', triggerId: null });
      const stranger = await orgWithAgent(t.repos, m(0));
      await storeJob(t, stranger, { timeoutMs: null, createdAt: m(70), status: 'rejected' });
      await finish(ok, 'success', 11);
      await finish(failedEarly, 'failed', 70);
      await finish(failedLate, 'failed', 120);
      await finish(timedOut, 'timed_out', 110);
      await finish(update, 'failed', 130);
      await repos().jobs.start(agentId, running.id, at(91 * 60_000));
      await repos().jobs.start(otherAgentId, runningLater.id, at(96 * 60_000));

      const byHour = async (since: string) =>
        (await repos().jobs.countTriggerJobsByHour(orgId, since)).sort(
          (a, b) => a.hour.localeCompare(b.hour) || a.status.localeCompare(b.status),
        );
      expect(await byHour(m(0))).toEqual([
        { hour: '2026-01-02T03', status: 'failed', count: 1 },
        { hour: '2026-01-02T03', status: 'success', count: 1 },
        { hour: '2026-01-02T04', status: 'failed', count: 1 },
        { hour: '2026-01-02T04', status: 'pending', count: 1 },
        { hour: '2026-01-02T04', status: 'running', count: 2 },
        { hour: '2026-01-02T04', status: 'timed_out', count: 1 },
      ]);
      expect((await byHour(m(60))).map((r) => r.hour)).toEqual(Array(4).fill('2026-01-02T04'));
      expect(await byHour(m(101))).toEqual([]);

      const ids = (jobs: { id: string }[]) => jobs.map((j) => j.id);
      expect(ids(await repos().jobs.listRunningTriggerJobs(orgId, 10))).toEqual([runningLater.id, running.id]);
      expect(ids(await repos().jobs.listRunningTriggerJobs(orgId, 1))).toEqual([runningLater.id]);
      // By their end, newest first, failed and timed out together; never the update job.
      expect(ids(await repos().jobs.listRecentFailures(orgId, 10))).toEqual([
        failedLate.id,
        timedOut.id,
        failedEarly.id,
      ]);
      expect(ids(await repos().jobs.listRecentFailures(orgId, 2))).toEqual([failedLate.id, timedOut.id]);
      expect(await repos().jobs.listRecentFailures(stranger.orgId, 10)).toEqual([]);
    });

    it("counts an organization's agents by status, every status named", async () => {
      // beforeEach: one agent that was connected and is disconnected now, one just enrolled.
      expect(await repos().agents.countByStatus(orgId)).toEqual({
        connected: 0,
        disconnected: 1,
        pending: 1,
        revoked: 0,
      });
      await repos().agents.markConnected(agentId, iso(1_000));
      await repos().agents.revoke(orgId, otherAgentId, iso(1_000));
      expect(await repos().agents.countByStatus(orgId)).toEqual({
        connected: 1,
        disconnected: 0,
        pending: 0,
        revoked: 1,
      });
      expect(await repos().agents.countByStatus(newId())).toEqual({
        connected: 0,
        disconnected: 0,
        pending: 0,
        revoked: 0,
      });
    });

    it('finds a job only in its own organization', async () => {
      const job = await insertJob();
      expect((await repos().jobs.findInOrg(orgId, job.id))?.id).toBe(job.id);
      expect(await repos().jobs.findInOrg(newId(), job.id)).toBeNull();
    });
  });
});

import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { HttpAnswer } from '../../src/http/client.js';
import { fixture, isAlive } from '../exec/helpers.js';
import { CANCELLED_BEFORE_START_MESSAGE } from '../../src/jobs/intake.js';
import { answered, assignment, harness, sh, type Harness } from './harness.js';
import { eventually } from '../../../test/helpers/poll.js';

const open: Harness[] = [];
function make(...args: Parameters<typeof harness>): Harness {
  const h = harness(...args);
  open.push(h);
  return h;
}
const leftovers: number[] = [];
afterEach(async () => {
  for (const h of open.splice(0)) {
    await h.stop();
    fs.rmSync(h.stateDir, { recursive: true, force: true });
  }
  for (const pid of leftovers.splice(0)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone, as it should be
    }
  }
});

const slow = { name: 'slow', steps: [sh('sleep 0.4')] };
const quick = { name: 'quick', steps: [sh('echo hello')] };
const lines = (h: Harness, jobId: string) =>
  h.sent.flatMap((r) => (r.kind === 'logs' && r.jobId === jobId ? r.body.lines.map((l) => l.text) : []));

describe('a cancel event', () => {
  it('takes a waiting job out of the queue and reports it cancelled without starting it', async () => {
    const h = make([slow, quick]);
    const [running, waiting] = [assignment('slow'), assignment('quick')];
    h.manager.onJobEvent(running);
    h.manager.onJobEvent(waiting);
    await eventually(() => h.kinds(waiting.jobId).includes('accept'));
    h.manager.onCancelEvent({ jobId: waiting.jobId });
    expect(h.manager.queue.waiting).toEqual([]);
    await eventually(() => h.finishOf(waiting.jobId) !== undefined);
    expect(h.finishOf(waiting.jobId)).toMatchObject({
      status: 'cancelled',
      exitCode: null,
      errorMessage: 'cancelled: a user cancelled the job before it started',
    });
    expect(h.kinds(waiting.jobId)).toEqual(['accept', 'finish']);
    expect(h.journal.get(waiting.jobId)?.state).toBe('finished');
    await eventually(() => h.finishOf(running.jobId) !== undefined);
    expect(h.finishOf(running.jobId)?.status).toBe('success');
    expect(h.kinds(waiting.jobId)).toEqual(['accept', 'finish']);
  });

  it("stops a running job with SIGTERM and leaves its steps the workflow's cancelGrace to clean up", async () => {
    const tidy = {
      name: 'tidy',
      cancelGrace: 30_000,
      // `ready` once the sleep runs: a cancel before it would miss it, which would hold the output
      // open until the grace's SIGKILL.
      steps: [sh(`trap 'echo stopping; sleep 0.5; echo cleaned up; exit 0' TERM; sleep 30 & echo ready; wait`)],
    };
    const h = make([tidy]);
    const job = assignment('tidy');
    h.manager.onJobEvent(job);
    await eventually(() => lines(h, job.jobId).includes('ready'));
    h.manager.onCancelEvent({ jobId: job.jobId });
    await eventually(() => h.finishOf(job.jobId) !== undefined);
    // The agent's own kill grace here is 200 ms: the step's half-second cleanup ran within the workflow's.
    expect(lines(h, job.jobId)).toEqual(expect.arrayContaining(['stopping', 'cleaned up']));
    expect(h.finishOf(job.jobId)).toMatchObject({
      status: 'cancelled',
      exitCode: null,
      errorMessage: 'cancelled: a user cancelled the job; step 1 was stopped',
    });
  });

  it('kills the whole process tree of a running step that ignores SIGTERM once the grace is over', async () => {
    // The fixture writes its pid and its child's to `tree.pids` in the job's workspace (its cwd).
    const stubborn = {
      name: 'stubborn',
      cancelGrace: 300,
      steps: [{ run: fixture('stubborn-tree.sh'), args: ['tree.pids'] }],
    };
    const h = make([stubborn]);
    const job = assignment('stubborn');
    h.manager.onJobEvent(job);
    const workspacePids = path.join(h.stateDir, 'jobs', job.jobId, 'workspace', 'tree.pids');
    await eventually(() => fs.existsSync(workspacePids));
    const pids = fs.readFileSync(workspacePids, 'utf8').trim().split(' ').map(Number);
    leftovers.push(...pids);
    expect(pids.every(isAlive)).toBe(true);
    h.manager.onCancelEvent({ jobId: job.jobId });
    await eventually(() => h.finishOf(job.jobId) !== undefined, 10_000);
    expect(h.finishOf(job.jobId)).toMatchObject({ status: 'cancelled' });
    await eventually(() => pids.every((pid) => !isAlive(pid)), 5_000);
  });

  it('stops a job whose start is being answered before its first step', async () => {
    const { promise: gate, resolve: release } = Promise.withResolvers<void>();
    const h = make([quick], {
      answer: async (r): Promise<HttpAnswer> => {
        if (r.kind === 'start') await gate;
        return answered(r);
      },
    });
    const job = assignment('quick');
    h.manager.onJobEvent(job);
    await eventually(() => h.kinds(job.jobId).includes('start'));
    h.manager.onCancelEvent({ jobId: job.jobId });
    release();
    await eventually(() => h.finishOf(job.jobId) !== undefined);
    expect(h.finishOf(job.jobId)).toMatchObject({
      status: 'cancelled',
      errorMessage: 'cancelled: a user cancelled the job',
    });
    expect(lines(h, job.jobId).some((text) => text.startsWith('step 1'))).toBe(false);
  });

  it('confirms the cancel of a job it does not hold with a cancelled result, and leaves an ended one alone', async () => {
    const h = make([quick]);
    const done = assignment('quick');
    h.manager.onJobEvent(done);
    await eventually(() => h.journal.get(done.jobId)?.finalDelivered === true);
    const before = h.sent.length;
    h.manager.onCancelEvent({ jobId: done.jobId });
    const unknown = assignment('quick').jobId;
    h.manager.onCancelEvent({ jobId: unknown });
    h.manager.onCancelEvent({ jobId: '../etc' });
    h.manager.onCancelEvent(null);
    await eventually(() => h.finishOf(unknown) !== undefined);
    expect(h.sent.slice(before).map((r) => `${r.kind}:${r.jobId === unknown ? 'unknown' : r.jobId}`)).toEqual([
      'finish:unknown',
    ]);
    expect(h.finishOf(unknown)).toMatchObject({
      status: 'cancelled',
      errorMessage: 'cancelled: a user cancelled the job, which this agent did not hold',
    });
    expect(h.records.filter((r) => /cancel event without a usable job id/.test(r.msg))).toHaveLength(2);
  });
});

describe('the cancel of a job the agent does not hold, sent again at every connect', () => {
  it('is confirmed once while its confirmation waits in the outbox, across a restart too', async () => {
    const offline = (): Promise<HttpAnswer> => Promise.resolve({ status: 503, body: {} });
    const h = make([quick], { answer: offline });
    const unknown = assignment('quick').jobId;
    for (let connect = 0; connect < 5; connect += 1) {
      h.manager.onCancelEvent({ jobId: unknown });
      await eventually(() => h.outbox.has(unknown, 'finish'));
    }
    expect(h.outbox.entries().filter((e) => e.report.jobId === unknown)).toHaveLength(1);
    expect(h.sent.filter((r) => r.jobId === unknown)).toHaveLength(1);

    const after = h.restart();
    open.push(after);
    after.manager.onCancelEvent({ jobId: unknown });
    after.manager.onCancelEvent({ jobId: unknown });
    expect(after.outbox.entries().filter((e) => e.report.jobId === unknown)).toHaveLength(1);
    expect(after.sent).toEqual([]);
  });

  it('is confirmed once when the cancel comes again while the confirmation is on the wire', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const h = make([quick], { answer: async (r) => (await held, answered(r)) });
    const unknown = assignment('quick').jobId;
    h.manager.onCancelEvent({ jobId: unknown });
    h.manager.onCancelEvent({ jobId: unknown });
    release();
    await eventually(() => h.finishOf(unknown) !== undefined);
    await h.sender.flush(200);
    expect(h.sent.filter((r) => r.jobId === unknown)).toHaveLength(1);
    // Delivered: a later cancel (the coordinator did not take it after all) is confirmed again.
    h.manager.onCancelEvent({ jobId: unknown });
    await eventually(() => h.sent.filter((r) => r.jobId === unknown).length === 2);
  });
});

describe('a job whose start cannot be delivered', () => {
  const offline = (): Promise<HttpAnswer> => Promise.resolve({ status: 503, body: {} });

  it('waits for the answer to its start, and never runs when the coordinator refuses it (cancelled meanwhile)', async () => {
    const marker = path.join(fs.mkdtempSync(path.join(fs.realpathSync('/tmp'), 'drover-offline-')), 'ran');
    const h = make([{ name: 'mark', steps: [sh(`touch ${marker}`)] }], { answer: offline });
    const job = assignment('mark');
    h.manager.onJobEvent(job);
    await eventually(() => h.outbox.size === 1); // its start waits in the outbox
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(fs.existsSync(marker)).toBe(false);
    // Not `running` meanwhile: a crash now must not fail it as interrupted (it is delivered again).
    expect(h.journal.get(job.jobId)?.state).toBe('accepted');
    // Back: the coordinator cancelled the job while it could not reach the agent.
    h.answer = (report) =>
      Promise.resolve(
        report.kind === 'start' ? { status: 409, body: { error: { code: 'conflict' } } } : answered(report),
      );
    await h.sender.drainNow();
    await eventually(() => h.journal.get(job.jobId)?.state === 'abandoned');
    expect(fs.existsSync(marker)).toBe(false);
  });

  it('runs once the coordinator has answered its start', async () => {
    const marker = path.join(fs.mkdtempSync(path.join(fs.realpathSync('/tmp'), 'drover-offline-')), 'ran');
    const h = make([{ name: 'mark', steps: [sh(`touch ${marker}`)] }], { answer: offline });
    const job = assignment('mark');
    h.manager.onJobEvent(job);
    await eventually(() => h.outbox.size === 1);
    expect(fs.existsSync(marker)).toBe(false);
    h.answer = (report) => Promise.resolve(answered(report));
    await h.sender.drainNow();
    await eventually(() => h.finishOf(job.jobId) !== undefined);
    expect(h.finishOf(job.jobId)?.status).toBe('success');
    expect(fs.existsSync(marker)).toBe(true);
  });

  it('ends at once, not started, when the shutdown comes while its start is being stored', async () => {
    // The secrets load runs while the start is reported: held, the job stays in the moment
    // between its start going to the outbox and the journal saying it waits for the answer.
    let loaded: () => void = () => {};
    const loadSecrets = () =>
      new Promise<{ secrets: Record<string, string> }>((resolve) => (loaded = () => resolve({ secrets: {} })));
    const h = make([{ name: 'mark', steps: [sh('true')] }], { answer: offline, loadSecrets });
    const job = assignment('mark');
    h.manager.onJobEvent(job);
    await eventually(() => h.outbox.size === 1 && h.journal.get(job.jobId)?.state === 'running');
    const began = Date.now();
    const stopped = h.manager.shutdown(60_000);
    loaded();
    await stopped;
    expect(Date.now() - began).toBeLessThan(5_000); // not the minute of grace
    expect(h.journal.get(job.jobId)).toMatchObject({
      state: 'finished',
      final: { kind: 'finish', body: { status: 'cancelled', errorMessage: CANCELLED_BEFORE_START_MESSAGE } },
    });
  });

  it('ends at once, not started, when the agent shuts down meanwhile', async () => {
    const h = make([{ name: 'mark', steps: [sh('true')] }], { answer: offline });
    const job = assignment('mark');
    h.manager.onJobEvent(job);
    await eventually(() => h.outbox.size === 1);
    const began = Date.now();
    await h.manager.shutdown(60_000);
    expect(Date.now() - began).toBeLessThan(5_000); // not the minute of grace
    expect(h.journal.get(job.jobId)).toMatchObject({
      state: 'finished',
      final: { kind: 'finish', body: { status: 'cancelled', errorMessage: CANCELLED_BEFORE_START_MESSAGE } },
    });
  });
});

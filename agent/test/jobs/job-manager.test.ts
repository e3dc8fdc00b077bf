import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { loadPatternEngine, RejectJobRequest } from '@drover/shared';
import { jobFiles } from '../../src/exec/job-files.js';
import { StepLauncher } from '../../src/exec/step-launcher.js';
import { isAlive, spares } from '../exec/helpers.js';
import { DAMAGED_MESSAGE, decideIntake, type IntakeContext } from '../../src/jobs/intake.js';
import { answered, assignment, harness, sh, type Harness } from './harness.js';
import { eventually } from '../../../test/helpers/poll.js';
import type { Report } from '../../src/outbox/report.js';

const open: Harness[] = [];
function make(...args: Parameters<typeof harness>): Harness {
  const h = harness(...args);
  open.push(h);
  return h;
}
afterEach(async () => {
  for (const h of open.splice(0)) {
    await h.stop();
    fs.rmSync(h.stateDir, { recursive: true, force: true });
  }
});

const quick = { name: 'quick', steps: [sh('echo hello')] };
const slow = { name: 'slow', steps: [sh('sleep 0.4')] };

describe('a new job', () => {
  it('is started at once when the queue is idle (start alone), its lines sent, then finished, in order', async () => {
    const h = make([quick]);
    const job = assignment('quick');
    h.manager.onJobEvent(job);
    await eventually(() => h.finishOf(job.jobId) !== undefined);
    expect(h.kinds(job.jobId)).toEqual(['start', 'logs', 'finish']);
    expect(h.finishOf(job.jobId)).toMatchObject({ status: 'success', exitCode: 0 });
    const lines = h.sent.filter((r) => r.kind === 'logs').flatMap((r) => (r.kind === 'logs' ? r.body.lines : []));
    expect(lines.map((l) => l.seq)).toEqual(lines.map((_, i) => i + 1));
    expect(lines.find((l) => l.stream === 'stdout')).toMatchObject({ text: 'hello', step: 0 });
    await eventually(() => h.journal.get(job.jobId)?.finalDelivered === true);
    expect(h.journal.get(job.jobId)).toMatchObject({ state: 'finished', final: { kind: 'finish' } });
  });

  it('has its last line logged at error when it fails, so `logs --level warn` shows it', async () => {
    const h = make([quick, { name: 'broken', steps: [sh('exit 3')] }]);
    const [good, bad] = [assignment('quick'), assignment('broken')];
    h.manager.onJobEvent(good);
    await eventually(() => h.finishOf(good.jobId) !== undefined);
    h.manager.onJobEvent(bad);
    await eventually(() => h.finishOf(bad.jobId) !== undefined);
    const last = (jobId: string) => h.records.filter((r) => r.jobId === jobId && /^job finished/.test(r.msg)).at(-1);
    expect(last(good.jobId)).toMatchObject({ level: 30, msg: 'job finished: success' });
    expect(last(bad.jobId)).toMatchObject({ level: 50, msg: expect.stringMatching(/^job finished: failed: step 1/) });
  });

  it('is on disk before it is promised or started, and flushed no more often than that', async () => {
    const h = make([{ name: 'long', steps: [sh('sleep 5')] }, quick]);
    const first = assignment('long');
    // Every flush of this agent's state directory, on the event loop (`fsyncSync`) or on the thread
    // pool (`fsync`), with how many reports had been sent by then and whether the first job's step
    // had been spawned. (Not another's: an earlier test's agent may still be finishing a spare
    // directory on the pool when this one starts, on a busy machine.)
    const flushes: { on: 'loop' | 'pool'; sent: number; spawned: boolean }[] = [];
    const note = (on: 'loop' | 'pool', fd: number) => {
      const file = fs.readlinkSync(`/proc/self/fd/${fd}`);
      if (file !== h.stateDir && !file.startsWith(`${h.stateDir}/`)) return;
      flushes.push({ on, sent: h.sent.length, spawned: h.journal.get(first.jobId)?.processGroup !== undefined });
    };
    const { fsync, fsyncSync } = fs;
    const onLoop = vi.spyOn(fs, 'fsyncSync').mockImplementation((fd) => {
      note('loop', fd);
      fsyncSync(fd);
    });
    const onPool = vi.spyOn(fs, 'fsync').mockImplementation((fd, callback) => {
      note('pool', fd);
      fsync(fd, callback);
    });
    try {
      h.manager.onJobEvent(first);
      await eventually(() => h.kinds(first.jobId).includes('start'));
      await eventually(() => h.journal.get(first.jobId)?.processGroup !== undefined);
      // Started at once: only its `running` entry is flushed (the file, its directory and the new
      // directory's entry in jobs/), on the thread pool while its start is reported (handed to the
      // transport before the first flush begins), and before its step is spawned; neither its
      // `accepted` entry nor its step's process group is.
      expect(flushes).toEqual(Array.from({ length: 3 }, () => ({ on: 'pool', sent: 1, spawned: false })));

      const second = assignment('quick');
      const sentBefore = h.sent.length;
      h.manager.onJobEvent(second);
      // Queued: its `accepted` entry is on disk before its `accept` is sent.
      expect(flushes.slice(3)).toEqual(
        Array.from({ length: 3 }, () => ({ on: 'loop', sent: sentBefore, spawned: true })),
      );
      await eventually(() => h.kinds(second.jobId).includes('accept'));
      expect(h.finishOf(first.jobId)).toBeUndefined();
      expect(flushes).toHaveLength(6);
    } finally {
      onLoop.mockRestore();
      onPool.mockRestore();
    }
  });

  it('has its files created and the secrets read while its start is answered, and runs with them', async () => {
    let secretsRead = false;
    let answerStart: (() => void) | undefined;
    const h = make(
      [{ name: 'env', steps: [sh('cat "$DROVER_PARAMS_FILE"; echo "token=$TOKEN"')], secretsKeys: ['TOKEN'] }],
      {
        loadSecrets: () => {
          secretsRead = true;
          return Promise.resolve({ secrets: { TOKEN: 's3cr3t-value' } });
        },
        answer: (r) =>
          r.kind === 'start'
            ? new Promise((resolve) => (answerStart = () => resolve(answered(r))))
            : Promise.resolve(answered(r)),
      },
    );
    const job = assignment('env', { params: { env: 'staging' } });
    const files = jobFiles(h.stateDir, job.jobId);
    h.manager.onJobEvent(job);
    // The start is not answered yet: the files and the secrets are ready, and no step runs.
    // The two files are written side by side: the params file may still be empty when the output one exists.
    const params = () => (fs.existsSync(files.paramsFile) ? fs.readFileSync(files.paramsFile, 'utf8') : '');
    await eventually(
      () => answerStart !== undefined && secretsRead && fs.existsSync(files.outputFile) && params().endsWith('\n'),
    );
    expect(JSON.parse(params())).toEqual({ env: 'staging' });
    expect(h.journal.get(job.jobId)?.processGroup).toBeUndefined();
    answerStart!();
    await eventually(() => h.finishOf(job.jobId) !== undefined);
    expect(h.finishOf(job.jobId)).toMatchObject({ status: 'success', exitCode: 0 });
    const lines = h.sent.flatMap((r) => (r.kind === 'logs' ? r.body.lines : [])).map((l) => l.text);
    expect(lines).toContain('token=***');
    expect(lines.join('\n')).toContain('"env": "staging"');
  });

  it('is rejected with queue_full when the queue already holds `capacity` jobs, the running one included', async () => {
    const h = make([slow], { capacity: 2 });
    const [running, waiting, refused] = [assignment('slow'), assignment('slow'), assignment('slow')];
    h.manager.onJobEvent(running);
    h.manager.onJobEvent(waiting);
    h.manager.onJobEvent(refused);
    expect(h.manager.queue.waiting.map((j) => j.jobId)).toEqual([waiting.jobId]);
    await eventually(() => h.kinds(refused.jobId).length > 0);
    expect(h.sent.find((r) => r.jobId === refused.jobId)).toEqual({
      kind: 'reject',
      jobId: refused.jobId,
      body: { reason: 'queue_full', message: 'it already holds 2 jobs, its capacity' },
    });
    expect(h.records.find((r) => r.jobId === refused.jobId && r.level === 40)?.msg).toBe('job queue full; rejecting');
    await eventually(() => h.finishOf(waiting.jobId) !== undefined, 5000);
    expect(h.finishOf(running.jobId)?.status).toBe('success');
  });

  it('is rejected with unknown_workflow when the workflow is not defined here', async () => {
    const h = make([quick]);
    const job = assignment('missing');
    h.manager.onJobEvent(job);
    await eventually(() => h.sent.length > 0);
    expect(h.sent).toEqual([
      {
        kind: 'reject',
        jobId: job.jobId,
        body: { reason: 'unknown_workflow', message: 'no valid workflow named missing' },
      },
    ]);
  });

  it('is rejected with invalid_params when its params do not fit the workflow file here', async () => {
    // What the coordinator checked against the reported definition, the file that runs checks again:
    // a coordinator broken into cannot hand the step a value the file keeps out.
    await loadPatternEngine();
    const branchy = {
      name: 'branchy',
      paramsSchema: [
        { name: 'branch', type: 'string' as const, pattern: '^[a-z0-9-]+$', required: true },
        { name: 'depth', type: 'number' as const, default: 1 },
      ],
      steps: [sh('echo "$DROVER_PARAM_BRANCH"')],
    };
    const h = make([branchy]);
    const bad = assignment('branchy', { params: { branch: 'main; rm -rf /', extra: 1 } });
    const good = assignment('branchy', { params: { branch: 'main' } });
    h.manager.onJobEvent(bad);
    h.manager.onJobEvent(good);
    await eventually(() => h.finishOf(good.jobId) !== undefined);
    expect(h.sent.find((r) => r.jobId === bad.jobId)).toEqual({
      kind: 'reject',
      jobId: bad.jobId,
      body: {
        reason: 'invalid_params',
        message:
          "the params do not fit the workflow file on this agent: params.extra is not a parameter of this workflow (the workflow's params are `branch`, `depth`); params.branch must match the pattern `^[a-z0-9-]+$`, got `main; rm -rf /` (string)",
      },
    });
    expect(h.kinds(bad.jobId)).toEqual(['reject']);
    expect(h.finishOf(good.jobId)?.status).toBe('success');
  });

  it('is rejected with a message cut to what the coordinator takes, so that the job does not stay pending there', async () => {
    // Three long patterns quoted: 3,500 characters, which the coordinator refused (422, at most
    // 2,000), the rejection dropped and the job pending there for ever.
    await loadPatternEngine();
    const pattern = `^(${Array.from({ length: 50 }, (_, i) => `release-${i}-candidate`).join('|')})$`;
    const strict = {
      name: 'strict',
      paramsSchema: ['a', 'b', 'c'].map((name) => ({ name, type: 'string' as const, pattern })),
      steps: [sh('true')],
    };
    const h = make([strict]);
    const bad = assignment('strict', { params: { a: 'x', b: 'y', c: 'z' } });
    h.manager.onJobEvent(bad);
    await eventually(() => h.sent.length > 0);
    const reject = h.sent[0] as Extract<Report, { kind: 'reject' }>;
    expect(reject.body.reason).toBe('invalid_params');
    expect(reject.body.message).toHaveLength(RejectJobRequest.properties.message.maxLength);
    expect(reject.body.message).toMatch(/^the params do not fit the workflow file on this agent: params\.a must match/);
    expect(reject.body.message!.endsWith('…')).toBe(true);
  });

  it('is checked again against the file as it is when its turn comes: a stricter pattern keeps a queued value out', async () => {
    await loadPatternEngine();
    const gated = (pattern: string) => ({
      name: 'gated',
      paramsSchema: [{ name: 'target', type: 'string' as const, pattern, required: true }],
      steps: [sh('echo "ran with $DROVER_PARAM_TARGET"')],
    });
    const h = make([slow, gated('.*')]);
    const [first, queued] = [assignment('slow'), assignment('gated', { params: { target: 'prod; rm -rf /' } })];
    h.manager.onJobEvent(first);
    h.manager.onJobEvent(queued);
    await eventually(() => h.kinds(queued.jobId).includes('accept'));
    h.define(gated('^[a-z]+$'));
    await eventually(() => h.finishOf(queued.jobId));
    expect(h.finishOf(queued.jobId)).toMatchObject({
      status: 'failed',
      errorMessage:
        'the params do not fit the workflow file on this agent: params.target must match the pattern `^[a-z]+$`, got `prod; rm -rf /` (string) (the file changed after the job was accepted); no step ran',
    });
    expect(JSON.stringify(h.sent)).not.toContain('ran with');
  });

  it('is accepted into the queue when another job runs, and started when its turn comes', async () => {
    const h = make([slow, quick]);
    const [first, second] = [assignment('slow'), assignment('quick')];
    h.manager.onJobEvent(first);
    h.manager.onJobEvent(second);
    await eventually(() => h.finishOf(second.jobId) !== undefined);
    expect(h.kinds(second.jobId)).toEqual(['accept', 'start', 'logs', 'finish']);
    const order = h.sent.map((r) => `${r.kind}:${r.jobId === first.jobId ? 1 : 2}`);
    expect(order.indexOf('start:2')).toBeGreaterThan(order.indexOf('finish:1'));
  });

  it('is not run when the coordinator refuses its accept or its start (it is no longer waiting)', async () => {
    const h = make([slow, quick], {
      answer: (r) =>
        Promise.resolve(
          r.kind === 'accept' || (r.kind === 'start' && r.jobId === refusedStart.jobId)
            ? { status: 409, body: {} }
            : answered(r),
        ),
    });
    const refusedStart = assignment('quick');
    h.manager.onJobEvent(refusedStart);
    await eventually(() => h.journal.get(refusedStart.jobId)?.state === 'abandoned');
    const [running, refusedAccept] = [assignment('slow'), assignment('quick')];
    h.manager.onJobEvent(running);
    h.manager.onJobEvent(refusedAccept);
    await h.manager.queue.onIdle();
    expect(h.journal.get(refusedAccept.jobId)?.state).toBe('abandoned');
    expect(h.kinds(refusedStart.jobId)).toEqual(['start']);
    expect(h.kinds(refusedAccept.jobId)).toEqual(['accept']);
    // Its files were never prepared (its directory may be the spare made ahead, whose files are empty).
    const params = `${h.stateDir}/jobs/${refusedAccept.jobId}/params.json`;
    expect(fs.existsSync(params) ? fs.readFileSync(params, 'utf8') : '').toBe('');
  });
});

describe('a job the coordinator refused before', () => {
  it('runs when it is sent again pending (a pool job handed back to this agent after its start was refused)', async () => {
    let refuse = true;
    const h = make([quick], {
      answer: (r) => Promise.resolve(r.kind === 'start' && refuse ? { status: 404, body: {} } : answered(r)),
    });
    const job = assignment('quick');
    h.manager.onJobEvent(job);
    await eventually(() => h.journal.get(job.jobId)?.state === 'abandoned');
    expect(h.finishOf(job.jobId)).toBeUndefined();
    // Back in its pool, the job waits again and is handed to this agent: it runs, once.
    refuse = false;
    h.manager.onJobEvent(job);
    await eventually(() => h.finishOf(job.jobId) !== undefined);
    expect(h.finishOf(job.jobId)).toMatchObject({ status: 'success' });
    expect(h.kinds(job.jobId)).toEqual(['start', 'start', 'logs', 'finish']);
  });
});

describe('a first step held ready while the start is reported', () => {
  it('runs in the held spare once the start is answered, and never when the start is refused or the journal fails', async () => {
    const marks = fs.mkdtempSync(path.join(os.tmpdir(), 'drover-held-'));
    const launcher = new StepLauncher();
    let refuseStart = false;
    try {
      const touch = { name: 'touch', steps: [sh(`echo $$ > ${marks}/$DROVER_JOB_ID`)] };
      const h = make([touch], {
        launcher,
        answer: (r) => Promise.resolve(r.kind === 'start' && refuseStart ? { status: 409, body: {} } : answered(r)),
      });
      const ranIn = (jobId: string) =>
        fs.existsSync(`${marks}/${jobId}`) ? Number(fs.readFileSync(`${marks}/${jobId}`, 'utf8')) : null;

      launcher.warm();
      const [spare] = spares();
      const ran = assignment('touch');
      h.manager.onJobEvent(ran);
      await eventually(() => h.finishOf(ran.jobId) !== undefined);
      expect(h.finishOf(ran.jobId)).toMatchObject({ status: 'success' });
      expect(ranIn(ran.jobId)).toBe(spare); // the step ran in the spare itself

      await eventually(() => spares().length === 1, 5_000, 'a new spare after the job');
      const [second] = spares();
      refuseStart = true;
      const refused = assignment('touch');
      h.manager.onJobEvent(refused);
      await eventually(() => h.journal.get(refused.jobId)?.state === 'abandoned');
      await eventually(() => !isAlive(second!), 5_000, 'the held spare to end unrun');
      expect(ranIn(refused.jobId)).toBeNull();

      refuseStart = false;
      await h.manager.prepareNext();
      const [third] = spares();
      const failing = vi
        .spyOn(h.journal, 'updateInBackground')
        .mockRejectedValueOnce(new Error('EIO: the disk failed'));
      const broken = assignment('touch');
      h.manager.onJobEvent(broken);
      await eventually(() => !isAlive(third!), 5_000, 'the held spare to end unrun');
      expect(failing).toHaveBeenCalled();
      await h.manager.queue.onIdle();
      expect(ranIn(broken.jobId)).toBeNull();
    } finally {
      launcher.close();
      fs.rmSync(marks, { recursive: true, force: true });
    }
  });
});

describe('a job id runs at most once', () => {
  it('ignores a redelivery of a job it holds', async () => {
    const h = make([slow]);
    const job = assignment('slow');
    h.manager.onJobEvent(job);
    h.manager.onJobEvent({ ...job, status: 'queued' });
    await eventually(() => h.manager.queue.running !== null);
    h.manager.onJobEvent({ ...job, status: 'running' });
    await eventually(() => h.journal.get(job.jobId)?.finalDelivered === true);
    await h.manager.queue.onIdle();
    expect(h.kinds(job.jobId)).toEqual(['start', 'logs', 'finish']);
  });

  it('sends a delivered result again, without running the job, when the coordinator sends the job open again (its database restored from an older backup)', async () => {
    const h = make([quick]);
    const job = assignment('quick');
    h.manager.onJobEvent(job);
    await eventually(() => h.journal.get(job.jobId)?.finalDelivered === true);
    const finish = h.sent.find((r) => r.kind === 'finish');
    // The restored coordinator holds the job pending (or running) and sends it at the next connect.
    h.manager.onJobEvent({ ...job, status: 'pending' });
    await eventually(() => h.sent.filter((r) => r.kind === 'finish').length === 2);
    await h.manager.queue.onIdle();
    expect(h.kinds(job.jobId).filter((k) => k === 'start')).toHaveLength(1);
    expect(h.sent.filter((r) => r.kind === 'finish')[1]).toEqual(finish);
    // A job refused here is refused again the same way.
    const refused = assignment('not-here');
    h.manager.onJobEvent(refused);
    await eventually(() => h.journal.get(refused.jobId)?.finalDelivered === true);
    h.manager.onJobEvent(refused);
    await eventually(() => h.kinds(refused.jobId).filter((k) => k === 'reject').length === 2);
  });

  it('sends a result again when the coordinator still has the job open and the result never arrived', async () => {
    let finishes = 0;
    const h = make([quick], {
      answer: (r) => Promise.resolve(r.kind === 'finish' && finishes++ === 0 ? { status: 404, body: {} } : answered(r)),
    });
    const job = assignment('quick');
    h.manager.onJobEvent(job);
    await eventually(() => h.journal.get(job.jobId)?.finalDelivered === true);
    // Dropped (404) counts as settled: the journal does not ask again on its own...
    h.journal.update(job.jobId, { finalDelivered: false }); // ...but an undelivered one is resent on redelivery
    h.manager.onJobEvent({ ...job, status: 'running' });
    await eventually(() => h.sent.filter((r) => r.kind === 'finish').length === 2);
    expect(h.kinds(job.jobId).filter((k) => k === 'start')).toHaveLength(1);
  });

  it('fails a job it does not know that the coordinator has queued or running: lost in a restart', async () => {
    const h = make([quick]);
    const job = assignment('quick', { status: 'queued' });
    h.manager.onJobEvent(job);
    await eventually(() => h.sent.length > 0);
    expect(h.sent).toEqual([
      {
        kind: 'finish',
        jobId: job.jobId,
        body: expect.objectContaining({
          status: 'failed',
          exitCode: null,
          errorMessage: 'the agent restarted and lost this job',
        }),
      },
    ]);
  });

  it('after a restart, fails a job that was running (interrupted), and queues again one that never started', async () => {
    const before = make([quick]);
    const interrupted = assignment('quick');
    const neverStarted = assignment('quick');
    before.journal.create(interrupted, 'running', { startedAt: new Date().toISOString() });
    before.journal.create(neverStarted, 'accepted');

    const after = before.restart();
    open.push(after);
    after.manager.recover();
    await eventually(() => after.finishOf(interrupted.jobId) !== undefined);
    expect(after.finishOf(interrupted.jobId)).toMatchObject({
      status: 'failed',
      errorMessage: 'interrupted: the agent stopped while the job was running (crash or restart)',
    });
    // The coordinator delivers both again at connect:
    after.manager.onJobEvent({ ...interrupted, status: 'running' });
    after.manager.onJobEvent({ ...neverStarted, status: 'queued' });
    await eventually(() => after.finishOf(neverStarted.jobId) !== undefined);
    expect(after.kinds(neverStarted.jobId)).toEqual(['start', 'logs', 'finish']);
    // The interrupted one is not run: its result, delivered already, is sent again (the coordinator
    // that sent the job open, read before the result arrived, answers it as a duplicate).
    expect(after.kinds(interrupted.jobId).every((k) => k === 'finish')).toBe(true);
    expect(new Set(after.sent.filter((r) => r.jobId === interrupted.jobId).map((r) => JSON.stringify(r))).size).toBe(1);
  });

  it('after a restart, counts an interrupted job as a failed run only when the coordinator takes that result', async () => {
    const before = make([quick]);
    const interrupted = assignment('quick');
    const ended = assignment('quick'); // it succeeded, but the disk was full for its `finished` entry
    for (const job of [interrupted, ended])
      before.journal.create(job, 'running', { startedAt: new Date().toISOString() });

    const after = before.restart();
    open.push(after);
    after.answer = (report) =>
      Promise.resolve(
        report.jobId === ended.jobId
          ? {
              status: 409,
              body: {
                statusCode: 409,
                code: 'conflict',
                message: 'The job is success; it cannot be finished with this result',
                details: { jobId: ended.jobId, status: 'success' },
              },
            }
          : answered(report),
      );
    after.manager.recover();
    await eventually(() => after.journal.get(ended.jobId)?.finalDelivered === true);
    await eventually(() => after.journal.get(interrupted.jobId)?.finalDelivered === true);
    expect(after.counters.current).toMatchObject({ jobsRun: 1, jobsFailed: 1 });
    expect(after.records.find((r) => r.jobId === ended.jobId && r.status === 'success')?.msg).toBe(
      'the job was not interrupted: it had ended (success) and the coordinator has its result; ' +
        'only its journal entry had not been written (the disk was full?)',
    );
  });

  it('records a result the journal could not take (a full disk) with its delivered mark, not as still running', async () => {
    const h = make([quick]);
    const job = assignment('quick');
    const update = h.journal.update.bind(h.journal);
    vi.spyOn(h.journal, 'update').mockImplementation((jobId, patch, options) => {
      if (patch.state === 'finished' && patch.finalDelivered === false)
        throw Object.assign(new Error('Cannot write journal.json: no space left on the device'), { code: 'ENOSPC' });
      return update(jobId, patch, options);
    });
    h.manager.onJobEvent(job);
    await eventually(() => h.journal.get(job.jobId)?.finalDelivered === true);
    const onDisk = JSON.parse(fs.readFileSync(jobFiles(h.stateDir, job.jobId).journalFile, 'utf8'));
    expect(onDisk).toMatchObject({ state: 'finished', final: { body: { status: 'success' } }, finalDelivered: true });
    expect(h.counters.current).toMatchObject({ jobsRun: 1, jobsFailed: 0 });
  });

  it('after a restart, never runs a job whose journal entry is damaged, whatever its content: it ends failed', async () => {
    const before = make([quick]);
    const shapeless = assignment('quick'); // its entry has no assignment
    const unknownState = assignment('quick'); // its entry's state is not one of the agent's
    const empty = assignment('quick'); // a power cut left its entry empty
    const entryFile = (jobId: string) => path.join(before.stateDir, 'jobs', jobId, 'journal.json');
    const final = { kind: 'finish', body: { status: 'success', exitCode: 0, errorMessage: null, output: {} } };
    for (const job of [shapeless, unknownState, empty]) before.journal.create(job, 'running');
    fs.writeFileSync(entryFile(shapeless.jobId), JSON.stringify({ jobId: shapeless.jobId, state: 'running' }));
    const finished = JSON.parse(fs.readFileSync(entryFile(unknownState.jobId), 'utf8'));
    fs.writeFileSync(
      entryFile(unknownState.jobId),
      JSON.stringify({ ...finished, state: 'Finished', final, finalDelivered: true }),
    );
    fs.writeFileSync(entryFile(empty.jobId), '');

    const after = before.restart();
    open.push(after);
    after.manager.recover(); // threw "Cannot read properties of undefined (reading 'workflowName')"
    // The coordinator still has them pending (their start never reached it) and delivers them again:
    for (const job of [shapeless, unknownState, empty]) after.manager.onJobEvent(job);
    await eventually(() => [shapeless, unknownState, empty].every((job) => after.finishOf(job.jobId)));
    for (const job of [shapeless, unknownState, empty]) {
      expect(after.kinds(job.jobId)).toEqual(['finish']); // never started
      expect(after.finishOf(job.jobId)).toMatchObject({ status: 'failed', errorMessage: DAMAGED_MESSAGE });
      expect(after.journal.get(job.jobId)?.state).toBe('finished'); // a good entry now: settled as any job
    }
    expect(after.records.filter((r) => r.msg === DAMAGED_MESSAGE)).toHaveLength(3);
  });

  it('after a restart, resends a result that was kept in the journal but never delivered', async () => {
    const before = make([quick]);
    const job = assignment('quick');
    before.journal.create(job, 'finished', {
      final: { kind: 'finish', body: { status: 'success', exitCode: 0, errorMessage: null, output: { a: '1' } } },
    });
    const after = before.restart();
    open.push(after);
    after.manager.recover();
    await eventually(() => after.journal.get(job.jobId)?.finalDelivered === true);
    expect(after.sent).toEqual([
      { kind: 'finish', jobId: job.jobId, body: expect.objectContaining({ output: { a: '1' } }) },
    ]);
  });
});

describe('deploy events', () => {
  it('are ignored with a log line when deployments are not set up (agent/test/deploy covers the rest)', () => {
    const h = make([slow]);
    h.manager.onDeployEvent({ releaseId: 'r1' });
    expect(h.records.at(-1)).toMatchObject({ level: 40, msg: 'ignored a deploy event: it has no job id' });
    h.manager.onDeployEvent({ ...assignment('update'), kind: 'update', applicationId: 'a', params: {} });
    expect(h.records.at(-1)?.msg).toBe('ignored a deploy event: `params.artifact` is not a FileRef');
    expect(h.sent).toEqual([]);
  });
});

describe('shutdown', () => {
  it('cancels waiting jobs, lets the running one finish within the grace, and rejects new ones', async () => {
    const h = make([slow]);
    const [running, waiting] = [assignment('slow'), assignment('slow')];
    h.manager.onJobEvent(running);
    h.manager.onJobEvent(waiting);
    await eventually(() => h.manager.queue.running !== null);
    const stopping = h.manager.shutdown(5000);
    const late = assignment('slow');
    h.manager.onJobEvent(late);
    await stopping;
    expect(h.finishOf(running.jobId)?.status).toBe('success');
    expect(h.finishOf(waiting.jobId)).toMatchObject({
      status: 'cancelled',
      errorMessage: 'cancelled: the agent shut down before the job started',
    });
    expect(h.kinds(waiting.jobId)).toEqual(['accept', 'finish']);
    await eventually(() => h.kinds(late.jobId).length > 0);
    expect(h.sent.find((r) => r.jobId === late.jobId)).toMatchObject({
      kind: 'reject',
      body: { reason: 'shutting_down' },
    });
  });

  it('kills the running job when the grace ends and reports it cancelled', async () => {
    const h = make([{ name: 'long', steps: [sh('sleep 30')] }]);
    const job = assignment('long');
    h.manager.onJobEvent(job);
    await eventually(() => h.kinds(job.jobId).includes('start'));
    await eventually(() => h.journal.get(job.jobId)?.processGroup != null); // its step was spawned
    const startedAt = Date.now();
    // Real time: the grace runs out on a real child process.
    await h.manager.shutdown(200);
    expect(Date.now() - startedAt).toBeLessThan(3000);
    await eventually(() => h.finishOf(job.jobId) !== undefined);
    expect(h.finishOf(job.jobId)).toMatchObject({
      status: 'cancelled',
      errorMessage:
        'cancelled: the agent shut down and the job did not finish within the 200ms grace period; step 1 was stopped',
    });
  });
});

describe('the intake rules', () => {
  const base: IntakeContext = {
    entry: undefined,
    damaged: false,
    active: false,
    finalPending: false,
    shuttingDown: false,
    queueFull: false,
    capacity: 4,
    workflowProblem: null,
    paramsProblem: null,
  };
  const job = assignment('w');

  it('check shutting down, then the workflow, then the queue, for a new pending job', () => {
    expect(decideIntake(job, base)).toEqual({ action: 'accept' });
    expect(decideIntake(job, { ...base, queueFull: true, workflowProblem: 'x', shuttingDown: true })).toMatchObject({
      reason: 'shutting_down',
    });
    expect(decideIntake(job, { ...base, queueFull: true, workflowProblem: 'x', paramsProblem: 'y' })).toMatchObject({
      reason: 'unknown_workflow',
    });
    expect(decideIntake(job, { ...base, queueFull: true, paramsProblem: 'y' })).toMatchObject({
      reason: 'invalid_params',
      message: 'y',
    });
    expect(decideIntake(job, { ...base, queueFull: true })).toMatchObject({
      reason: 'queue_full',
      message: 'it already holds 4 jobs, its capacity',
    });
  });

  it('never accept a job id the journal knows', () => {
    const entry = (state: any, extra = {}) => ({
      jobId: job.jobId,
      assignment: job,
      state,
      receivedAt: '',
      startedAt: null,
      final: null,
      finalDelivered: false,
      note: null,
      updatedAt: '',
      ...extra,
    });
    expect(decideIntake(job, { ...base, entry: entry('accepted'), active: true }).action).toBe('ignore');
    expect(decideIntake(job, { ...base, entry: entry('accepted') }).action).toBe('requeue');
    // Its start was reported but its `running` entry never reached the disk: it never ran here.
    expect(decideIntake({ ...job, status: 'running' }, { ...base, entry: entry('accepted') }).action).toBe('fail_lost');
    expect(decideIntake({ ...job, status: 'queued' }, { ...base, entry: entry('accepted') }).action).toBe('requeue');
    expect(decideIntake(job, { ...base, entry: entry('running') }).action).toBe('fail_interrupted');
    expect(decideIntake(job, { ...base, entry: entry('finished') }).action).toBe('resend_final');
    // The coordinator sends open jobs only: the result it took is lost (a restored database).
    expect(decideIntake(job, { ...base, entry: entry('finished', { finalDelivered: true }) }).action).toBe(
      'resend_final',
    );
    expect(decideIntake(job, { ...base, entry: entry('rejected', { finalDelivered: true }) }).action).toBe(
      'resend_final',
    );
    expect(decideIntake(job, { ...base, entry: entry('rejected'), finalPending: true }).action).toBe('ignore');
    // Refused before (nothing of it ran): sent `pending` again, it waits again (a pool's job back in
    // its pool, handed to this agent again), and is decided as a new one; held as this agent's, lost.
    expect(decideIntake(job, { ...base, entry: entry('abandoned') }).action).toBe('accept');
    expect(decideIntake(job, { ...base, entry: entry('abandoned'), queueFull: true })).toMatchObject({
      reason: 'queue_full',
    });
    for (const status of ['queued', 'running'] as const)
      expect(decideIntake({ ...job, status }, { ...base, entry: entry('abandoned') }).action).toBe('fail_lost');
    // A state no build writes (the journal skips such an entry) is never taken for a new job.
    expect(decideIntake(job, { ...base, entry: entry('Finished', { finalDelivered: true }) }).action).toBe('ignore');
    expect(decideIntake(job, { ...base, entry: entry('Finished') }).action).toBe('ignore');
  });

  it('never run a job whose journal entry was damaged: it may have run', () => {
    for (const status of ['pending', 'queued', 'running'] as const)
      expect(decideIntake({ ...job, status }, { ...base, damaged: true })).toEqual({ action: 'fail_damaged' });
  });
});

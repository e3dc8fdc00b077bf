import fs from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import type { JobAssignment } from '@drover/shared';
import { isJobAssignment, MAX_JOB_TIMEOUT_MS, saneJobAssignment } from '../../src/jobs/job-event.js';
import { assignment, harness, sh, type Harness } from './harness.js';
import { eventually } from '../../../test/helpers/poll.js';

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

/** An assignment with fields of any type, as a broken coordinator could send. */
const raw = (fields: Record<string, unknown>): JobAssignment =>
  ({ ...assignment('quick'), ...fields }) as unknown as JobAssignment;

describe("a job event's fields", () => {
  it('takes a timeout up to the wire limit of a workflow timeout (24 hours)', () => {
    expect(MAX_JOB_TIMEOUT_MS).toBe(86_400_000);
    for (const timeoutMs of [null, undefined, 1, 30_000, 86_400_000]) {
      const event = raw({ timeoutMs });
      expect(saneJobAssignment(event)).toEqual({ assignment: event, problems: [] });
    }
  });

  it('sets aside a timeout out of range or of another type, a ref that is no text, a debug that is no boolean', () => {
    for (const timeoutMs of [3_000_000_000, 86_400_001, 'soon', -5, 0, 1.5, Number.NaN, true, {}]) {
      const { assignment: sane, problems } = saneJobAssignment(raw({ timeoutMs }));
      expect(sane.timeoutMs).toBeNull();
      expect(problems).toHaveLength(1);
      expect(problems[0]).toMatch(/^`timeoutMs` .* is not a whole number of milliseconds from 1 to 86400000: /);
    }
    const { assignment: sane, problems } = saneJobAssignment(raw({ ref: 42, debug: 'yes' }));
    expect([sane.ref, sane.debug]).toEqual([null, false]);
    expect(problems).toEqual([
      '`ref` 42 is not a text: the job runs without one',
      '`debug` "yes" is not true or false: the job runs without it',
    ]);
  });

  it('refuses a kind the agent does not know (it must not run as a trigger job)', () => {
    expect(isJobAssignment(raw({ kind: 'trigger' }))).toBe(true);
    expect(isJobAssignment(raw({ kind: 'update' }))).toBe(true);
    expect(isJobAssignment(raw({ kind: undefined }))).toBe(true);
    expect(isJobAssignment(raw({ kind: 'migrate' }))).toBe(false);
    expect(isJobAssignment(raw({ kind: 7 }))).toBe(false);
  });
});

describe('a job event with an unusable timeout', () => {
  it("runs the job within the workflow's timeout, with a warning, instead of timing it out at once", async () => {
    const h = make([{ name: 'quick', timeout: 30_000, steps: [sh('echo hello')] }]);
    const jobs = [3_000_000_000, 'soon', -5, 0].map((timeoutMs) => raw({ timeoutMs }));
    for (const job of jobs) {
      h.manager.onJobEvent(job);
      await eventually(() => h.finishOf(job.jobId) !== undefined);
      expect(h.finishOf(job.jobId)).toMatchObject({ status: 'success', exitCode: 0 });
      expect(h.journal.get(job.jobId)!.assignment.timeoutMs).toBeNull();
    }
    const warnings = h.records.filter((r) => r.level === 40 && /timeoutMs/.test(r.msg));
    expect(warnings.map((r) => r.msg)).toEqual(
      jobs.map(
        (job) =>
          `in the job event of job ${job.jobId}, \`timeoutMs\` ${JSON.stringify(job.timeoutMs)} is not a whole number ` +
          "of milliseconds from 1 to 86400000: the workflow's timeout (or the agent's default) applies",
      ),
    );
  });

  it("times the job out after the workflow's timeout", async () => {
    const h = make([{ name: 'sleepy', timeout: 300, steps: [sh('sleep 5')] }]);
    const job = { ...raw({ timeoutMs: 3_000_000_000 }), workflowName: 'sleepy' };
    const started = Date.now();
    h.manager.onJobEvent(job);
    await eventually(() => h.finishOf(job.jobId) !== undefined, 5_000);
    expect(h.finishOf(job.jobId)).toMatchObject({ status: 'timed_out' });
    expect(Date.now() - started).toBeGreaterThanOrEqual(300);
    expect(h.finishOf(job.jobId)!.errorMessage).toBe(
      "the job timed out after 300ms (the workflow's timeout) during step 1",
    );
  });

  it("names the agent's default as the limit that passed when the workflow sets no timeout", async () => {
    // It said "(the workflow's timeout)", sending a technician to look for a `timeout:` the file has not.
    const h = make([{ name: 'sleepy', steps: [sh('sleep 5')] }], { defaultJobTimeoutMs: 300 });
    const job = assignment('sleepy');
    h.manager.onJobEvent(job);
    await eventually(() => h.finishOf(job.jobId) !== undefined, 5_000);
    expect(h.finishOf(job.jobId)).toMatchObject({
      status: 'timed_out',
      errorMessage:
        "the job timed out after 300ms (the agent's default job timeout, --job-timeout, as the workflow sets none) during step 1",
    });
  });
});

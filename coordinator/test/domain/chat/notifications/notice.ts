import type { BatchNotice, JobOutcomeNotice } from '../../../../src/domain/model/chat-outbox.js';

/** A failed job's notice; `extra` overrides. */
export const notice = (extra: Partial<JobOutcomeNotice> = {}): JobOutcomeNotice => ({
  kind: 'job_outcome',
  jobId: '0f6c2a52-5d7e-4c1e-9a51-1e4b5a3f0c11',
  number: 42,
  triggerName: 'nightly build',
  workflowName: 'build',
  status: 'failed',
  ref: 'main',
  startedAt: '2026-03-01T10:00:00.000Z',
  finishedAt: '2026-03-01T10:03:05.000Z',
  exitCode: 2,
  errorMessage: 'step 2 (test) exited with code 2\nmore detail',
  output: { version: '1.4.2', artifact: { __type: 'FileRef', id: 'f-1' } },
  ...extra,
});

export const PUBLIC_URL = 'https://drover.example.com';
export const JOB_URL = `${PUBLIC_URL}/api/jobs/0f6c2a52-5d7e-4c1e-9a51-1e4b5a3f0c11`;

/** A batch two agents failed, named as agents may name themselves: with chat markup. */
export const hostileBatch = (): BatchNotice => ({
  kind: 'batch_outcome',
  batchId: 'b1',
  number: 7,
  triggerName: 'Fleet greeter',
  workflowName: 'greet',
  status: 'partial',
  jobCount: 3,
  succeeded: 1,
  failed: 2,
  cancelled: 0,
  failedAgents: [
    '<!channel> <https://evil.example/login|Re-authenticate here>',
    '[Re-authenticate](https://evil.example) *now*',
  ],
});

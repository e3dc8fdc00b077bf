import type { JobOutcomeNotice } from '../../../../src/domain/model/chat-outbox.js';

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

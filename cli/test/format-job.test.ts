import { describe, expect, it } from 'vitest';
import { describeOutcome } from '../src/jobs/format-job.js';

const ended = { exitCode: null, startedAt: null, finishedAt: null };

describe('describeOutcome', () => {
  it('says a cancelled job was cancelled once, then why', () => {
    const outcome = (errorMessage: string | null) => describeOutcome({ ...ended, status: 'cancelled', errorMessage });
    expect(outcome('cancelled: a user cancelled the job')).toBe('was cancelled: a user cancelled the job');
    expect(outcome('cancelled: the application was deleted')).toBe('was cancelled: the application was deleted');
    expect(outcome('the agent was revoked')).toBe('was cancelled: the agent was revoked');
    expect(outcome(null)).toBe('was cancelled');
  });

  it('keeps the message of any other outcome whole', () => {
    expect(describeOutcome({ ...ended, status: 'failed', exitCode: 2, errorMessage: 'cancelled: not really' })).toBe(
      'failed (exit code 2): cancelled: not really',
    );
    expect(describeOutcome({ ...ended, status: 'rejected', errorMessage: 'rejected: the queue is full' })).toBe(
      'was rejected: the queue is full',
    );
  });
});

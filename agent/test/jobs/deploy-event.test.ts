import { describe, expect, it } from 'vitest';
import { MAX_START_WITHIN_MS, parseDeployEvent } from '../../src/jobs/deploy-event.js';

const event = (startWithinMs: unknown) => ({
  jobId: '00000000-0000-4000-8000-000000000001',
  kind: 'update',
  applicationId: 'app',
  workflowName: 'apply',
  status: 'pending',
  params: {
    artifact: { __type: 'FileRef', id: 'file', downloadUrl: 'http://x/blob', filename: 'a.tar.gz' },
    release_id: 'r',
    version: '1.0',
    channel: 'stable',
    checksum_sha256: 'abc',
    sequence: 1,
    forced: false,
  },
  ...(startWithinMs === undefined ? {} : { startWithinMs }),
});

const spreadOf = (value: unknown) => {
  const parsed = parseDeployEvent(event(value));
  if (!parsed.ok) throw new Error(parsed.problem);
  return parsed.startWithinMs;
};

describe('parseDeployEvent: startWithinMs', () => {
  it('takes a positive whole number of ms, capped at 15 minutes', () => {
    expect(spreadOf(2_500)).toBe(2_500);
    expect(spreadOf(MAX_START_WITHIN_MS + 1)).toBe(MAX_START_WITHIN_MS);
  });

  it('reads an absent or unusable value as none, and still takes the job', () => {
    for (const value of [undefined, 0, -5, 1.5, '100', null, Number.MAX_VALUE]) expect(spreadOf(value)).toBe(0);
  });
});

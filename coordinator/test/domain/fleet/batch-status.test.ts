import { describe, expect, it } from 'vitest';
import { batchStatus } from '../../../src/domain/fleet/batch-service.js';
import type { BatchCounts } from '../../../src/domain/model/batches.js';

const counts = (c: Partial<BatchCounts>): BatchCounts => ({
  pending: 0,
  queued: 0,
  running: 0,
  success: 0,
  failed: 0,
  timed_out: 0,
  cancelled: 0,
  rejected: 0,
  ...c,
});

describe("a batch's status", () => {
  it('is pending until an agent takes one of its jobs (a job refused at once does not count), then running', () => {
    expect(batchStatus(counts({ pending: 3 }), 3)).toBe('pending');
    expect(batchStatus(counts({ pending: 2, rejected: 1 }), 3)).toBe('pending');
    expect(batchStatus(counts({ pending: 2, queued: 1 }), 3)).toBe('running');
    expect(batchStatus(counts({ pending: 2, failed: 1 }), 3)).toBe('running');
  });

  it('once every job ended: success, cancelled, failed (none succeeded) or partial', () => {
    expect(batchStatus(counts({ success: 3 }), 3)).toBe('success');
    expect(batchStatus(counts({ cancelled: 3 }), 3)).toBe('cancelled');
    expect(batchStatus(counts({ cancelled: 2, rejected: 1 }), 3)).toBe('failed');
    expect(batchStatus(counts({ failed: 1, timed_out: 1, rejected: 1 }), 3)).toBe('failed');
    expect(batchStatus(counts({ success: 1, rejected: 2 }), 3)).toBe('partial');
  });
});

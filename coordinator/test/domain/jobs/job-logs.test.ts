import { describe, expect, it } from 'vitest';
import { DEFAULT_JOB_LOG_MAX_BYTES, logCap } from '../../../src/domain/jobs/job-logs.js';

describe("a job log's cap", () => {
  it('keeps a quarter of the budget as the head', () => {
    expect(logCap(DEFAULT_JOB_LOG_MAX_BYTES)).toMatchObject({ maxBytes: 16 * 1024 * 1024, headBytes: 4 * 1024 * 1024 });
    expect(logCap(65_537).headBytes).toBe(16_384);
  });

  it('caps the lines at one per 16 bytes of the budget, a quarter of them the head', () => {
    expect(logCap(DEFAULT_JOB_LOG_MAX_BYTES)).toMatchObject({ maxLines: 1024 * 1024, headLines: 256 * 1024 });
    expect(logCap(65_537)).toMatchObject({ maxLines: 4_096, headLines: 1_024 });
  });

  it('says in the gap how many lines and bytes were dropped, and the limit, in words', () => {
    const cap = logCap(DEFAULT_JOB_LOG_MAX_BYTES);
    expect(cap.gapText({ lines: 182_311, bytes: 12.3 * 1024 * 1024 })).toBe(
      "[drover] 182,311 lines (12.3 MiB) dropped here: this job's log passed its limit of 16 MiB or 1,048,576 lines " +
        '(DROVER_JOB_LOG_MAX_BYTES); its first lines and its newest are kept',
    );
    expect(cap.gapText({ lines: 1, bytes: 1 })).toMatch(/^\[drover\] 1 line \(1 byte\) dropped here/);
    expect(cap.gapText({ lines: 3, bytes: 1536 })).toMatch(/^\[drover\] 3 lines \(1\.5 KiB\) dropped here/);
    expect(logCap(2 * 1024 ** 3).gapText({ lines: 2, bytes: 3 * 1024 ** 3 })).toMatch(
      /\(3 GiB\) dropped here: this job's log passed its limit of 2 GiB/,
    );
  });
});

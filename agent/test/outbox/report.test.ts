import { describe, expect, it } from 'vitest';
import { FinishJobRequest } from '@drover/shared';
import { fitReport, type Report } from '../../src/outbox/report.js';

describe('fitReport', () => {
  it("cuts a result's error to what the coordinator takes, never through a character, and leaves the rest", () => {
    const max = FinishJobRequest.properties.errorMessage.maxLength;
    const finish = (errorMessage: string | null): Report => ({
      kind: 'finish',
      jobId: 'j',
      body: { status: 'failed', exitCode: null, errorMessage, output: { a: 'b' } },
    });
    // 256 undeliverable `file:` outputs, say: their problems joined made the coordinator refuse the
    // result, and the stand-in that replaced it lost what went wrong.
    const long = fitReport(finish(`output problems: ${'x'.repeat(10_000)}`)) as Extract<Report, { kind: 'finish' }>;
    expect(long.body.errorMessage).toHaveLength(max);
    expect(long.body.errorMessage!.endsWith('x…')).toBe(true);
    expect(long.body.output).toEqual({ a: 'b' });
    // A character outside the BMP (two UTF-16 units) at the cut is left out whole.
    const emoji = fitReport(finish(`${'y'.repeat(max - 2)}😀${'z'.repeat(10)}`)) as Extract<Report, { kind: 'finish' }>;
    expect(emoji.body.errorMessage).toBe(`${'y'.repeat(max - 2)}…`);
    const short = finish('step 1 exited with code 3');
    expect(fitReport(short)).toBe(short);
    expect(fitReport(finish(null))).toEqual(finish(null));
  });
});

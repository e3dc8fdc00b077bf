import { describe, expect, it } from 'vitest';
import { LogShipper, MAX_BATCH_BYTES, MAX_BATCHES_ON_THEIR_WAY, MAX_LOG_TEXT } from '../../src/jobs/log-shipper.js';
import type { Report } from '../../src/outbox/report.js';

function shipper() {
  const sent: Report[] = [];
  const logs = new LogShipper('job-1', (report) => sent.push(report), { intervalMs: 60_000 });
  const batches = () => sent.map((r) => (r.kind === 'logs' ? r.body.lines : []));
  return { logs, batches };
}

describe('the log shipper', () => {
  it('numbers lines from 1 and sends a batch at 100 lines', () => {
    const { logs, batches } = shipper();
    for (let i = 0; i < 150; i++) logs.add({ stream: 'stdout', step: 0, text: `line ${i}` });
    expect(batches().map((b) => b.length)).toEqual([100]);
    logs.flush();
    expect(batches().map((b) => b.length)).toEqual([100, 50]);
    expect(
      batches()
        .flat()
        .map((l) => l.seq),
    ).toEqual(Array.from({ length: 150 }, (_, i) => i + 1));
  });

  it('cuts a line longer than the limit into several', () => {
    const { logs, batches } = shipper();
    logs.add({ stream: 'stderr', step: 1, text: 'x'.repeat(MAX_LOG_TEXT * 2 + 5) });
    logs.flush();
    expect(batches()[0]!.map((l) => l.text.length)).toEqual([MAX_LOG_TEXT, MAX_LOG_TEXT, 5]);
  });

  it('never cuts an emoji (a surrogate pair) in two: each piece stays Unicode text, nothing is lost', () => {
    const { logs, batches } = shipper();
    const text = 'a' + '😀'.repeat(MAX_LOG_TEXT);
    logs.add({ stream: 'stdout', step: 0, text });
    logs.flush();
    const pieces = batches()
      .flat()
      .map((l) => l.text);
    expect(pieces.every((p) => p.isWellFormed() && p.length <= MAX_LOG_TEXT)).toBe(true);
    expect(pieces.join('')).toBe(text);
  });

  it('keeps every batch under 256 KiB of JSON, however long or escaped its lines', () => {
    const { logs, batches } = shipper();
    for (let i = 0; i < 300; i++) logs.add({ stream: 'stdout', step: 0, text: 'w'.repeat(16_000) });
    // Control characters: six bytes each once escaped in JSON.
    for (let i = 0; i < 50; i++) logs.add({ stream: 'stdout', step: 0, text: '\u0001'.repeat(MAX_LOG_TEXT) });
    logs.flush();
    const all = batches();
    expect(all.flat()).toHaveLength(350);
    for (const batch of all) {
      expect(Buffer.byteLength(JSON.stringify({ lines: batch }))).toBeLessThanOrEqual(MAX_BATCH_BYTES);
    }
  });

  it('is backlogged while too many batches are on their way, and drained once most of them went', async () => {
    const answers: (() => void)[] = [];
    const logs = new LogShipper('job-1', () => new Promise<void>((resolve) => answers.push(resolve)), {
      intervalMs: 60_000,
      maxLines: 1,
    });
    for (let i = 1; i < MAX_BATCHES_ON_THEIR_WAY; i++) logs.add({ stream: 'stdout', step: 0, text: `line ${i}` });
    expect(logs.backlogged).toBe(false);
    logs.add({ stream: 'stdout', step: 0, text: 'one more' });
    expect(logs.backlogged).toBe(true);
    let drained = false;
    void logs.drained().then(() => (drained = true));
    for (const answer of answers.splice(0, MAX_BATCHES_ON_THEIR_WAY - 3)) answer();
    await new Promise((resolve) => setImmediate(resolve));
    expect(drained).toBe(false); // three still on their way
    answers.shift()!();
    await new Promise((resolve) => setImmediate(resolve));
    expect(drained).toBe(true);
    expect(logs.backlogged).toBe(false);
  });
});

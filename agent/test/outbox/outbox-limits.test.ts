import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, onTestFinished, vi } from 'vitest';
import type { HttpAnswer } from '../../src/http/client.js';
import { LogShipper } from '../../src/jobs/log-shipper.js';
import { FREE_SPACE_RESERVE_BYTES, MAX_JOB_LOG_BYTES, Outbox } from '../../src/outbox/outbox.js';
import { ReportSender, type Transport } from '../../src/outbox/report-sender.js';
import type { Report } from '../../src/outbox/report.js';
import { Backoff } from '../../src/util/backoff.js';
import { captureLogger } from '../log-capture.js';

/**
 * What the outbox keeps while the coordinator cannot take reports: a job's log is bounded (its
 * start and its end, one line saying how many lines were dropped between), its result never.
 */

let dir: string;
beforeEach(() => {
  dir = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'drover-agent-outbox-')), 'outbox');
});
afterEach(() => {
  fs.rmSync(path.dirname(dir), { recursive: true, force: true });
});

const finish = (jobId: string): Report => ({
  kind: 'finish',
  jobId,
  body: { status: 'success', exitCode: 0, errorMessage: null, output: {} },
});
const line = (seq: number, size = 1000) => ({
  seq,
  at: `2026-01-01T00:00:00.${String(seq % 1000).padStart(3, '0')}Z`,
  stream: 'stdout' as const,
  step: 0,
  text: `${seq} `.padEnd(size, 'x'),
});
/** A batch of `count` lines of 1000 bytes from `from`. */
const batch = (jobId: string, from: number, count = 10): Report => ({
  kind: 'logs',
  jobId,
  body: { lines: Array.from({ length: count }, (_, i) => line(from + i)) },
});
const dirBytes = () => fs.readdirSync(dir).reduce((sum, name) => sum + fs.statSync(path.join(dir, name)).size, 0);
const seqsOf = (outbox: Outbox, jobId = 'j') =>
  outbox
    .entries()
    .filter((e) => e.report.jobId === jobId && e.report.kind === 'logs')
    .flatMap((e) => (e.report.kind === 'logs' ? e.report.body.lines.map((l) => l.seq) : []));

describe("the outbox's bound on a job's log", () => {
  it('is what the coordinator keeps by default, with a reserve of free space', () => {
    expect(MAX_JOB_LOG_BYTES).toBe(16 * 1024 * 1024);
    expect(FREE_SPACE_RESERVE_BYTES).toBe(64 * 1024 * 1024);
  });

  it('keeps the first batches within a quarter, the newest in the rest, and one line for the gap', () => {
    const max = 100 * 1024;
    let outbox = Outbox.open(dir, { maxJobLogBytes: max, freeBytes: () => Infinity });
    outbox.append({ kind: 'accept', jobId: 'j' });
    for (let seq = 1; seq <= 1000; seq += 10) outbox.append(batch('j', seq));
    outbox.append(batch('other', 1));
    outbox.append(finish('j'));
    expect(outbox.logBytes('j')).toBeLessThanOrEqual(max);
    expect(dirBytes()).toBeLessThan(max + 20 * 1024);

    const check = (box: Outbox) => {
      const kinds = box.entries().map((e) => `${e.report.kind}:${e.report.jobId}`);
      expect(kinds[0]).toBe('accept:j');
      expect(kinds.slice(-2)).toEqual(['logs:other', 'finish:j']);
      const seqs = seqsOf(box);
      // The head: the first 20 lines (two batches, within 25 KiB); the end: the newest lines.
      expect(seqs.slice(0, 20)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
      expect(seqs.at(-1)).toBe(1000);
      expect(seqs).toEqual([...seqs].sort((a, b) => a - b)); // in order, the gap line at its place
      const gap = box.entries().find((e) => e.gap)!;
      expect(gap.report.kind === 'logs' && gap.report.body.lines).toEqual([
        {
          seq: seqs[21]! - 1, // the last line dropped
          at: expect.any(String) as string,
          stream: 'system',
          step: null,
          text: expect.stringMatching(
            new RegExp(
              `^\\[drover-agent\\] ${gap.gap!.lines} lines \\([\\d.]+ KiB\\) dropped here: the coordinator could not be reached and this job's log passed the 100 KiB the agent keeps of it meanwhile, or the disk was nearly full; its first lines and its newest are kept$`,
            ),
          ) as string,
        },
      ]);
      // Every line is kept or counted once.
      expect(seqs.length - 1 + gap.gap!.lines).toBe(1000);
    };
    check(outbox);
    outbox = Outbox.open(dir, { maxJobLogBytes: max, freeBytes: () => Infinity });
    check(outbox); // read back after a restart, the gap line goes on counting
    const before = outbox.entries().find((e) => e.gap)!.gap!.lines;
    outbox.append(batch('j', 1001));
    expect(outbox.entries().find((e) => e.gap)!.gap!.lines).toBeGreaterThan(before);
    expect(outbox.logBytes('j')).toBeLessThanOrEqual(max);
  });

  it('drops log batches, never a result, when the disk is nearly full', () => {
    let free = FREE_SPACE_RESERVE_BYTES + 50_000;
    const outbox = Outbox.open(dir, { freeBytes: () => free });
    outbox.append(batch('j', 1));
    free = FREE_SPACE_RESERVE_BYTES - 1;
    expect(outbox.append(batch('j', 11))).toBeNull();
    expect(outbox.append(batch('j', 21))).toBeNull();
    expect(outbox.append(finish('j'))).toMatchObject({ report: { kind: 'finish' } });
    const reopened = Outbox.open(dir);
    expect(reopened.entries().map((e) => e.report.kind)).toEqual(['logs', 'logs', 'finish']);
    expect(reopened.entries()[1]!.gap).toEqual({ lines: 20, bytes: 20_000 });
    expect(seqsOf(reopened)).toEqual([...Array.from({ length: 10 }, (_, i) => i + 1), 30]);
  });

  it('makes room for a result on a full disk by dropping log batches, and keeps it in memory if even that fails', () => {
    // The disk fills up after the log batches, and has room again once a file of the outbox is
    // removed. The outbox writes as the agent does (writeFileAtomic, whose error names the file
    // and carries the system's as its cause): a writer throwing ENOSPC itself hid that a full
    // disk never made room, and a result was kept in memory only, lost if the agent stopped.
    let full = false;
    const outbox = Outbox.open(dir, { freeBytes: () => Infinity });
    for (let seq = 1; seq <= 50; seq += 10) outbox.append(batch('j', seq));
    full = true;
    const write = fs.writeFileSync;
    const writes = vi.spyOn(fs, 'writeFileSync').mockImplementation((...args) => {
      if (full) throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
      write(...args);
    });
    onTestFinished(() => writes.mockRestore());
    const rm = fs.rmSync;
    const spy = vi.spyOn(fs, 'rmSync').mockImplementation((...args) => {
      if (!String(args[0]).endsWith('.tmp')) full = false; // not the failed write's own temporary file
      rm(...args);
    });
    try {
      expect(outbox.append(finish('j'))).toMatchObject({ report: { kind: 'finish' } });
      expect(outbox.entries().map((e) => e.report.kind)).toEqual(['logs', 'finish']);
      expect(outbox.entries()[0]!.gap).toEqual({ lines: 50, bytes: 50_000 });
      expect(Outbox.open(dir).has('j', 'finish')).toBe(true);

      // Nothing left to drop and still no room: kept in memory, sent all the same.
      full = true;
      spy.mockImplementation(rm);
      const entry = outbox.append(finish('k'))!;
      expect(entry.inMemory).toBe(true);
      expect(outbox.has('k', 'finish')).toBe(true);
      outbox.remove(entry);
      expect(outbox.has('k')).toBe(false);
    } finally {
      spy.mockRestore();
    }
  });
});

describe('a job printing 48 MiB while the coordinator answers 503', () => {
  it('leaves at most 16 MiB of its log in the outbox, then sends its start, its end, the gap line and its result in order', async () => {
    let online = false;
    const sent: Report[] = [];
    const transport: Transport = (report) => {
      if (!online) return Promise.resolve({ status: 503, body: { message: 'busy' } });
      sent.push(report);
      return Promise.resolve({ status: 200, body: { jobId: report.jobId, status: 'pending' } } as HttpAnswer);
    };
    const outbox = Outbox.open(dir, { freeBytes: () => Infinity });
    const sender = new ReportSender({
      outbox,
      transport,
      logger: captureLogger().logger,
      backoff: new Backoff({ baseMs: 600_000, capMs: 600_000 }),
    });
    const shipper = new LogShipper('j', (report) => void sender.send(report));
    const text = 'y'.repeat(8 * 1024);
    const lines = (48 * 1024 * 1024) / text.length;
    for (let i = 0; i < lines; i++) shipper.add({ stream: 'stdout', step: 0, text });
    shipper.flush();
    expect(await sender.send(finish('j'))).toMatchObject({ outcome: 'stored' });
    expect(dirBytes()).toBeLessThan(MAX_JOB_LOG_BYTES + 64 * 1024);
    expect(outbox.logBytes('j')).toBeLessThanOrEqual(MAX_JOB_LOG_BYTES);

    online = true;
    expect(await sender.drainNow()).toBe(true);
    sender.close();
    expect(sent.at(-1)!.kind).toBe('finish');
    const seqs = sent.flatMap((r) => (r.kind === 'logs' ? r.body.lines.map((l) => l.seq) : []));
    expect(seqs[0]).toBe(1);
    expect(seqs.at(-1)).toBe(lines);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    const gapLines = sent.flatMap((r) => (r.kind === 'logs' ? r.body.lines.filter((l) => l.stream === 'system') : []));
    expect(gapLines).toHaveLength(1);
    expect(gapLines[0]!.text).toMatch(/^\[drover-agent\] [\d,]+ lines \([\d.]+ MiB\) dropped here/);
    const dropped = Number(/\] ([\d,]+) lines/.exec(gapLines[0]!.text)![1]!.replaceAll(',', ''));
    expect(seqs.length - 1 + dropped).toBe(lines);
    expect(fs.readdirSync(dir)).toEqual([]);
  });
});

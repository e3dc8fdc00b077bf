import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, onTestFinished, vi } from 'vitest';
import { formatRecord, levelNumber } from '@drover/shared';
import { followLogs, readLogs, type LogLine } from '../../src/logging/read-logs.js';
import { RotatingFile } from '../../src/logging/rotating-file.js';

let stateDir: string;
let logs: string;
beforeEach(() => {
  stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'drover-read-logs-'));
  logs = path.join(stateDir, 'logs');
  fs.mkdirSync(logs);
});
afterEach(() => fs.rmSync(stateDir, { recursive: true, force: true }));

const JOB = '1b2c3d4e-5f60-4718-9a0b-c1d2e3f40516';
const rec = (msg: string, extra: Record<string, unknown> = {}) =>
  `${JSON.stringify({ level: 30, time: '2026-11-22T10:31:02.000Z', pid: 1, ...extra, msg })}\n`;
const msgs = (lines: LogLine[]) => lines.map((l) => l.record?.msg ?? l.text);

describe('readLogs', () => {
  it('reads the rotated files oldest first, then the current one', () => {
    fs.writeFileSync(path.join(logs, 'agent.log.2'), rec('one') + rec('two'));
    fs.writeFileSync(path.join(logs, 'agent.log.1'), rec('three'));
    fs.writeFileSync(path.join(logs, 'agent.log.10'), rec('zero'));
    // Damaged lines (JSON that is no record of the logger) are shown as their text.
    fs.writeFileSync(path.join(logs, 'agent.log'), `${rec('four')}not json\n{}\n{"msg":"x"}\n${rec('five')}`);
    const seen: LogLine[] = [];
    readLogs(stateDir, {}, (l) => seen.push(l)).close();
    expect(msgs(seen)).toEqual(['zero', 'one', 'two', 'three', 'four', 'not json', '{}', '{"msg":"x"}', 'five']);
    expect(seen.filter((l) => l.record === null)).toHaveLength(3);
  });

  it('filters by job (by its beginning too) and by level, dropping lines that are not records', () => {
    fs.writeFileSync(
      path.join(logs, 'agent.log'),
      rec('about the job', { jobId: JOB }) +
        rec('job failed', { jobId: JOB, level: 50 }) +
        rec('other job', { jobId: 'ffffffff-0000-4000-8000-000000000000', level: 40 }) +
        rec('agent warning', { level: 40 }) +
        'garbage\n',
    );
    const read = (filter: Parameters<typeof readLogs>[1]) => {
      const seen: LogLine[] = [];
      readLogs(stateDir, filter, (l) => seen.push(l)).close();
      return msgs(seen);
    };
    expect(read({ job: '1B2C3D4E' })).toEqual(['about the job', 'job failed']);
    expect(read({ job: JOB, minLevel: levelNumber('warn')! })).toEqual(['job failed']);
    expect(read({ minLevel: levelNumber('warn')! })).toEqual(['job failed', 'other job', 'agent warning']);
  });

  it('finds nothing, without failing, when there is no log yet', () => {
    fs.rmSync(logs, { recursive: true });
    const seen: LogLine[] = [];
    readLogs(stateDir, {}, (l) => seen.push(l)).close();
    expect(seen).toEqual([]);
  });
});

describe('followLogs', () => {
  it('prints new lines as they come, across rotations, without losing or repeating one', async () => {
    // The follower's polls run on fake timers: each one is let go by the test, between writes.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    onTestFinished(() => void vi.useRealTimers());
    const poll = () => vi.advanceTimersByTimeAsync(20);
    const file = new RotatingFile(path.join(logs, 'agent.log'), { maxBytes: 400, maxFiles: 3 });
    file.write(rec('before'));
    const seen: LogLine[] = [];
    const tail = readLogs(stateDir, {}, (l) => seen.push(l));
    const stop = new AbortController();
    const following = followLogs(tail, {}, (l) => seen.push(l), stop.signal, 20);
    try {
      for (let i = 1; i <= 12; i++) {
        file.write(rec(`line ${i}`)); // about 80 bytes: a rotation every 5 lines
        if (i % 3 === 0) await poll();
      }
      expect(seen).toHaveLength(13);
      // half a line, then the rest: shown once complete
      file.write(rec('partial').slice(0, 20));
      await poll();
      expect(msgs(seen)).not.toContain('partial');
      file.write(rec('partial').slice(20));
      await poll();
    } finally {
      stop.abort();
      await following;
      file.close();
    }
    expect(msgs(seen)).toEqual(['before', ...Array.from({ length: 12 }, (_, i) => `line ${i + 1}`), 'partial']);
    expect(fs.existsSync(path.join(logs, 'agent.log.1'))).toBe(true);
  });
});

describe('formatRecord', () => {
  it('writes a line a field technician can read', () => {
    const line = formatRecord(
      {
        level: 50,
        time: '2026-11-22T10:31:02.000Z',
        pid: 7,
        jobId: JOB,
        workflow: 'deploy',
        msg: 'step 2 (build) exited with code 3',
        exitCode: 3,
        err: { message: 'boom', stack: 'Error: boom\n    at x' },
      },
      { utc: true },
    );
    expect(line).toBe(
      '2026-11-22 10:31:02  ERROR  job …e3f40516 deploy: step 2 (build) exited with code 3  exitCode=3  (boom)',
    );
    expect(formatRecord({ level: 30, time: 0, msg: 'x' }, { utc: true, color: true })).toBe(
      '1970-01-01 00:00:00  \u001b[32mINFO \u001b[39m  x',
    );
    expect(
      formatRecord(
        { level: 50, time: 0, msg: 'x', err: { message: 'boom', stack: 'Error: boom\n    at x' } },
        { utc: true, stacks: true },
      ),
    ).toBe('1970-01-01 00:00:00  ERROR  x\n    Error: boom\n        at x');
  });
});

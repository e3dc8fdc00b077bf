import { afterEach, describe, expect, it, vi } from 'vitest';
import { FileSweeper, STALE_TEMP_MS } from '../../../src/domain/files/file-sweeper.js';

function fakeFiles(batches: number[], failWith?: Error) {
  const calls = { sweep: 0, temps: [] as number[] };
  const files = {
    async sweepDue(limit?: number) {
      calls.sweep++;
      if (failWith) throw failWith;
      expect(limit).toBe(100);
      return batches.shift() ?? 0;
    },
    local: {
      async removeTemps(olderThanMs: number) {
        calls.temps.push(olderThanMs);
        return 0;
      },
    },
  };
  return { files: files as never, calls };
}

const logger = () => {
  const lines: { level: string; obj: object }[] = [];
  return {
    lines,
    info: (obj: object) => void lines.push({ level: 'info', obj }),
    error: (obj: object) => void lines.push({ level: 'error', obj }),
  };
};

describe('FileSweeper', () => {
  afterEach(() => void vi.useRealTimers());

  it('sweeps in batches until one comes back short, then removes stale temp files', async () => {
    const { files, calls } = fakeFiles([100, 100, 7]);
    const log = logger();
    const sweeper = new FileSweeper({ files, intervalMs: 1000, logger: log });
    expect(await sweeper.sweep()).toBe(207);
    expect(calls.sweep).toBe(3);
    expect(calls.temps).toEqual([STALE_TEMP_MS]);
    expect(log.lines).toEqual([{ level: 'info', obj: { files: 207 } }]);
  });

  it('logs a failing pass instead of throwing', async () => {
    const { files } = fakeFiles([], new Error('database is locked'));
    const log = logger();
    expect(await new FileSweeper({ files, intervalMs: 1000, logger: log }).sweep()).toBe(0);
    expect(log.lines[0]?.level).toBe('error');
  });

  it('runs every interval once started, and not after stop', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const { files, calls } = fakeFiles([]);
    const sweeper = new FileSweeper({ files, intervalMs: 1000, logger: logger() });
    sweeper.start();
    await vi.advanceTimersByTimeAsync(999);
    expect(calls.sweep).toBe(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(calls.sweep).toBe(1);
    await vi.advanceTimersByTimeAsync(2000);
    expect(calls.sweep).toBe(3);
    expect(calls.temps).toEqual([STALE_TEMP_MS, STALE_TEMP_MS, STALE_TEMP_MS]);
    await sweeper.stop();
    await vi.advanceTimersByTimeAsync(5000);
    expect(calls.sweep).toBe(3);
  });
});

import { describe, expect, it } from 'vitest';
import { FileSweeper, STALE_TEMP_MS } from '../../src/domain/file-sweeper.js';

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
    const { files, calls } = fakeFiles([]);
    const sweeper = new FileSweeper({ files, intervalMs: 20, logger: logger() });
    sweeper.start();
    await new Promise((r) => setTimeout(r, 130));
    await sweeper.stop();
    const passes = calls.sweep;
    expect(passes).toBeGreaterThanOrEqual(3);
    await new Promise((r) => setTimeout(r, 60));
    expect(calls.sweep).toBe(passes);
  });
});

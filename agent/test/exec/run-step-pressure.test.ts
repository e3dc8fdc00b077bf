import { describe, expect, it } from 'vitest';
import { runStep, type OutputPressure } from '../../src/exec/run-step.js';
import { sh, tempStateDir } from './helpers.js';
import { eventually, sleep } from '../../../test/helpers/poll.js';

describe("a step's output under pressure", () => {
  it('is read no further while backlogged: the step waits on its pipe instead of the agent holding its output', async () => {
    let backlogged = true;
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const pressure: OutputPressure = {
      get backlogged() {
        return backlogged;
      },
      drained: () => released,
    };
    let lines = 0;
    // 20,000 lines of 100 characters: 2 MB, far more than a pipe holds (64 KiB).
    const step = runStep({
      step: sh(`yes ${'a'.repeat(99)} | head -n 20000; echo done`),
      workspace: tempStateDir(),
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
      timeoutMs: 30_000,
      signal: new AbortController().signal,
      onLine: () => (lines += 1),
      killGraceMs: 1_000,
      pressure,
    });
    await eventually(() => lines > 0);
    let ended = false;
    void step.then(() => (ended = true));
    // Real time is the subject: for this long, nothing more may be read and the step may not end.
    await sleep(300);
    const whilePaused = lines;
    expect(whilePaused).toBeLessThan(2_000);
    expect(ended).toBe(false);
    backlogged = false;
    release();
    expect(await step).toEqual({ kind: 'exited', exitCode: 0 });
    expect(lines).toBe(20_001);
  });
});

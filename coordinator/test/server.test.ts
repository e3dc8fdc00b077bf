import { afterEach, describe, expect, it, vi } from 'vitest';
import { createLogger } from '../src/logger.js';
import { installSignalHandlers, type RunningServer } from '../src/server.js';

const logger = createLogger('silent');
let uninstall: (() => void) | undefined;

afterEach(() => {
  uninstall?.();
  uninstall = undefined;
  expect(process.listenerCount('SIGTERM')).toBe(0);
  expect(process.listenerCount('SIGINT')).toBe(0);
});

function fakeServer(stop: () => Promise<void>): RunningServer {
  return {
    coordinator: {} as RunningServer['coordinator'],
    url: 'http://x',
    publicUrl: 'http://x',
    metricsUrl: null,
    stop,
  };
}

/** Waits until `exit` was called (or fails after a second). */
async function exitCode(exit: ReturnType<typeof vi.fn>): Promise<number> {
  await vi.waitFor(() => expect(exit).toHaveBeenCalled(), { timeout: 1000, interval: 5 });
  expect(exit).toHaveBeenCalledTimes(1);
  return exit.mock.calls[0]![0] as number;
}

describe('installSignalHandlers', () => {
  it('stops the server on the first SIGTERM and exits 0 once it has stopped', async () => {
    const order: string[] = [];
    const exit = vi.fn(() => order.push('exit'));
    const stop = vi.fn(async () => {
      order.push('stop');
    });
    uninstall = installSignalHandlers(fakeServer(stop), logger, { exit });
    process.emit('SIGTERM', 'SIGTERM');
    expect(await exitCode(exit)).toBe(0);
    expect(order).toEqual(['stop', 'exit']);
  });

  it('handles SIGINT like SIGTERM', async () => {
    const exit = vi.fn();
    const stop = vi.fn(async () => {});
    uninstall = installSignalHandlers(fakeServer(stop), logger, { exit });
    process.emit('SIGINT', 'SIGINT');
    expect(await exitCode(exit)).toBe(0);
    expect(stop).toHaveBeenCalledTimes(1);
  });

  it('exits 1 when stopping fails', async () => {
    const exit = vi.fn();
    uninstall = installSignalHandlers(
      fakeServer(() => Promise.reject(new Error('disk gone'))),
      logger,
      { exit },
    );
    process.emit('SIGTERM', 'SIGTERM');
    expect(await exitCode(exit)).toBe(1);
  });

  it('exits 1 at once on a second signal while still stopping', async () => {
    const exit = vi.fn();
    const stop = vi.fn(() => new Promise<void>(() => {}));
    uninstall = installSignalHandlers(fakeServer(stop), logger, { exit, graceMs: 60_000 });
    process.emit('SIGTERM', 'SIGTERM');
    expect(exit).not.toHaveBeenCalled();
    process.emit('SIGINT', 'SIGINT');
    expect(exit).toHaveBeenCalledWith(1);
    expect(stop).toHaveBeenCalledTimes(1);
  });

  it('exits 1 when a shutdown hangs past the grace period', async () => {
    const exit = vi.fn();
    uninstall = installSignalHandlers(
      fakeServer(() => new Promise<void>(() => {})),
      logger,
      { exit, graceMs: 50 },
    );
    const started = Date.now();
    process.emit('SIGTERM', 'SIGTERM');
    expect(await exitCode(exit)).toBe(1);
    expect(Date.now() - started).toBeGreaterThanOrEqual(45);
  });
});

import os from 'node:os';
import type { Logger } from 'pino';
import type { Daemon } from './daemon.js';

const SIGNALS = ['SIGTERM', 'SIGINT'] as const;

/**
 * SIGTERM or SIGINT: graceful stop. A second one: the running step is killed and the process
 * exits at once (128 + the signal's number); the job is then reported `failed` (interrupted) at
 * the next start. An unref'd watchdog ends a shutdown that hangs past its grace periods.
 * Returns the function that removes the handlers.
 */
export function handleShutdownSignals(
  daemon: Daemon,
  logger: Logger,
  exit: (code: number) => void = (code) => process.exit(code),
): () => void {
  let received = false;
  const onSignal = (signal: NodeJS.Signals) => {
    const code = 128 + (os.constants.signals[signal] ?? 15);
    if (received) {
      logger.warn(`received ${signal} again: stopping at once`);
      daemon.killNow();
      exit(code);
      return;
    }
    received = true;
    logger.info(`received ${signal}: stopping gracefully (send it again to stop at once)`);
    const { shutdownGraceMs, killGraceMs, flushTimeoutMs } = daemon.options;
    const watchdog = setTimeout(
      () => {
        logger.error('the shutdown did not complete in time; exiting');
        daemon.killNow();
        exit(code);
      },
      shutdownGraceMs + killGraceMs + flushTimeoutMs + 15_000,
    );
    watchdog.unref();
    void daemon.stop();
  };
  for (const signal of SIGNALS) process.on(signal, onSignal);
  return () => {
    for (const signal of SIGNALS) process.off(signal, onSignal);
  };
}

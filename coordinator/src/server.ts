import type { Logger } from 'pino';
import type { Config } from './config/config.js';
import { createCoordinator, type Coordinator } from './coordinator.js';

export interface RunningServer {
  coordinator: Coordinator;
  /** The URL the server listens on (with the real port when port 0 was asked). */
  url: string;
  stop(): Promise<void>;
}

/** Starts the coordinator and listens. Signal handling is the CLI's (see installSignalHandlers). */
export async function startServer(config: Config, logger: Logger): Promise<RunningServer> {
  const coordinator = await createCoordinator(config, logger);
  try {
    const address = await coordinator.app.listen({ port: config.port, host: config.host });
    return { coordinator, url: address, stop: () => coordinator.close() };
  } catch (error) {
    await coordinator.close();
    throw error;
  }
}

/**
 * First SIGTERM/SIGINT: graceful shutdown (stop accepting, finish in-flight requests, flush,
 * close the database). Second signal, or a shutdown still hanging after `graceMs`: exit at once.
 */
export function installSignalHandlers(server: RunningServer, logger: Logger, graceMs = 10_000): void {
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) {
      logger.warn({ signal }, 'second signal: exiting now');
      process.exit(1);
    }
    stopping = true;
    logger.info({ signal }, 'shutting down');
    const watchdog = setTimeout(() => {
      logger.error({ graceMs }, 'shutdown did not finish in time: exiting');
      process.exit(1);
    }, graceMs);
    watchdog.unref();
    server.stop().then(
      () => {
        logger.info('stopped');
        process.exitCode = 0;
      },
      (error: unknown) => {
        logger.error({ err: error }, 'shutdown failed');
        process.exitCode = 1;
      },
    );
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
}

import type { Logger } from 'pino';
import type { Config } from './config/config.js';
import { createCoordinator, type Coordinator } from './coordinator.js';
import { startMetricsServer, type MetricsServer } from './metrics/metrics-server.js';
import { releaseStartupMemoryWhenQuiet } from './release-startup-memory.js';

/** Process concerns only: listening, signals, last-resort error handlers. */

export interface RunningServer {
  coordinator: Coordinator;
  /** The address the server listens on (with the real port when port 0 was asked). */
  url: string;
  /** The public URL (`{base_url}` is `${publicUrl}/v1`), with the real port when port 0 was asked. */
  publicUrl: string;
  /** `--metrics-listen`'s address as bound (`http://host:port`, serving `/metrics`), or null. */
  metricsUrl: string | null;
  stop(): Promise<void>;
}

/** Starts the coordinator and listens. Signal handling is the CLI's (see installSignalHandlers). */
export async function startServer(config: Config, logger: Logger): Promise<RunningServer> {
  const coordinator = await createCoordinator(config, logger);
  let metricsServer: MetricsServer | null = null;
  let cancelRelease = () => {};
  const stop = async () => {
    cancelRelease();
    try {
      await metricsServer?.close();
    } finally {
      await coordinator.close();
    }
  };
  try {
    // The kernel caps the backlog at net.core.somaxconn (docs/operations.md, "Reconnect storms").
    const url = await coordinator.app.listen({ port: config.port, host: config.host, backlog: config.listenBacklog });
    if (config.metrics.listen && coordinator.metrics) {
      metricsServer = await startMetricsServer(coordinator.metrics, config.metrics.listen, logger);
      logger.info({ url: `${metricsServer.url}/metrics` }, 'metrics listening');
    }
    // What starting took is given back once the coordinator is quiet (release-startup-memory.ts).
    cancelRelease = releaseStartupMemoryWhenQuiet({
      onReleased: ({ ms, rssBefore, rssAfter }) =>
        logger.debug(
          { ms: Math.round(ms), rssBeforeMiB: mib(rssBefore), rssAfterMiB: mib(rssAfter) },
          'startup memory released',
        ),
    });
    return {
      coordinator,
      url,
      publicUrl: coordinator.ctx.config.publicUrl,
      metricsUrl: metricsServer?.url ?? null,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

const mib = (bytes: number) => Math.round((bytes / 1048576) * 10) / 10;

export interface ShutdownOptions {
  /** How long a graceful shutdown may take before the process exits anyway. */
  graceMs?: number;
  /** Replaceable for tests. */
  exit?: (code: number) => void;
}

/**
 * First SIGTERM/SIGINT: graceful shutdown (stop accepting, finish in-flight requests, flush the
 * audit log, close the database), then exit 0 (1 when closing failed). A second signal, or a
 * shutdown still running after `graceMs` (an unref'd watchdog), exits at once with status 1.
 * Returns a function that removes the handlers.
 */
export function installSignalHandlers(
  server: RunningServer,
  logger: Logger,
  options: ShutdownOptions = {},
): () => void {
  const graceMs = options.graceMs ?? 10_000;
  const exit = options.exit ?? ((code: number) => process.exit(code));
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) {
      logger.warn({ signal }, 'second signal: exiting now');
      logger.flush();
      exit(1);
      return;
    }
    stopping = true;
    logger.info({ signal, graceMs }, 'shutting down');
    const watchdog = setTimeout(() => {
      logger.error({ graceMs }, 'shutdown did not finish in time: exiting');
      logger.flush();
      exit(1);
    }, graceMs);
    watchdog.unref();
    void (async () => {
      let code = 0;
      try {
        await server.stop();
        logger.info('stopped');
      } catch (error) {
        code = 1;
        logger.error({ err: error }, 'shutdown failed');
      } finally {
        clearTimeout(watchdog);
        // Exit explicitly: a timer or socket left behind must not keep a stopped server alive.
        logger.flush(() => exit(code));
      }
    })();
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  return () => {
    process.off('SIGTERM', onSignal);
    process.off('SIGINT', onSignal);
  };
}

/**
 * An error nothing caught is logged as fatal; the process then exits 1 (its state is unknown).
 * A standard output whose reader went away (`... | head`) is not such an error: what is written
 * there from then on is lost, and the server goes on (pino drops its own lines the same way).
 */
export function installCrashHandlers(logger: Logger): void {
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') return;
    logger.fatal({ err: error }, 'standard output failed');
    process.exit(1);
  });
  const crash = (kind: string) => (error: unknown) => {
    logger.fatal({ err: error }, kind);
    logger.flush();
    process.exit(1);
  };
  process.on('uncaughtException', crash('uncaught exception'));
  process.on('unhandledRejection', crash('unhandled rejection'));
}

import type { Command } from 'commander';
import type { BootstrapResult } from '../domain/orgs/bootstrap.js';
import type { RunningServer } from '../server.js';
import { configOrExit, lockDataDirOrExit, refuseIfDataDirInUse, withServerOptions } from './common.js';
import { checkListen, listenProblem, type ListenProblem } from './listen-check.js';

export function configureStartCommand(program: Command): void {
  withServerOptions(program.command('start'))
    .description('run the coordinator (migrates the database and bootstraps an empty one first)')
    .option(
      '--metrics-listen <host:port>',
      'also serve GET /metrics without credentials on this address (env DROVER_METRICS_LISTEN; docs/metrics.md)',
    )
    .action(async (flags: Record<string, string | undefined>) => {
      const config = configOrExit(flags);
      // What another process stands in the way of is said in one line, before anything is
      // created: a coordinator already using this data directory, then the port.
      refuseIfDataDirInUse(config.dataDir);
      const problem = await checkListen(config.host, config.port);
      if (problem) cannotListen(problem);
      const metrics = config.metrics.listen;
      const metricsProblem = metrics && (await checkListen(metrics.host, metrics.port));
      if (metricsProblem) cannotListen(metricsProblem, METRICS_HINT);
      lockDataDirOrExit(config.dataDir, 'start');
      // The server's modules (Fastify, the databases' drivers, every route) are read only by a
      // command that runs it: `--version`, `--help` and a bad setting answer without them.
      const { createLogger } = await import('../logger.js');
      const { installCrashHandlers, installSignalHandlers, startServer } = await import('../server.js');
      const logger = createLogger(config.logLevel, { format: config.logFormat });
      installCrashHandlers(logger);
      for (const warning of config.unreadVariables) logger.warn(warning);
      let server: RunningServer;
      try {
        server = await startServer(config, logger);
      } catch (error) {
        // Taken since the check: the metrics address when the error names its port, else the API's.
        const onMetrics = metrics !== null && metrics.port !== 0 && (error as { port?: unknown }).port === metrics.port;
        const lost = onMetrics
          ? listenProblem(error, metrics.host, metrics.port)
          : listenProblem(error, config.host, config.port);
        if (lost) cannotListen(lost, onMetrics ? METRICS_HINT : undefined);
        logger.fatal({ err: error }, 'could not start');
        process.stderr.write(`drover-coordinator: could not start: ${(error as Error).message}\n`);
        process.exit(1);
      }
      installSignalHandlers(server, logger);
      if (!flags.publicUrl && !process.env.DROVER_PUBLIC_URL && /^(0\.0\.0\.0|::|\[::\])$/.test(config.host)) {
        logger.warn(
          { publicUrl: server.publicUrl },
          'listening on all interfaces without DROVER_PUBLIC_URL: presigned URLs and links will name an unreachable host',
        );
      }
      // Asked for JSON lines by name: standard output holds nothing else, and the banner goes to
      // standard error (under `auto` it stays where a person starting the coordinator looks).
      const bannerTo = config.logFormat === 'json' ? process.stderr : process.stdout;
      bannerTo.write(`${banner(server, server.coordinator.bootstrap).join('\n')}\n`);
    });
}

const HINTS: Record<ListenProblem['code'], string> = {
  in_use: '; stop it or choose another port (--port, DROVER_PORT)',
  not_local: ' (--host, DROVER_HOST)',
  forbidden: ' (--port, DROVER_PORT)',
  other: '',
};

/** What to change when the `--metrics-listen` address is the one that cannot be used. */
const METRICS_HINT = ' (--metrics-listen, DROVER_METRICS_LISTEN)';

function cannotListen(problem: ListenProblem, hint = HINTS[problem.code]): never {
  process.stderr.write(`drover-coordinator: ${problem.message}${hint}\n`);
  process.exit(1);
}

/** What a person starting the coordinator by hand needs: where it is, and how to sign in. */
export function banner(server: RunningServer, boot: BootstrapResult): string[] {
  const base = `${server.publicUrl}/v1`;
  const lines = [`Drover coordinator listening on ${server.url} (API: ${base})`, `Dashboard: ${server.publicUrl}/`];
  if (server.metricsUrl) lines.push(`Metrics: ${server.metricsUrl}/metrics (Prometheus, no credentials)`);
  if (!boot.created) return lines;
  return [
    ...lines,
    `Bootstrapped owner ${boot.email} of organization "${boot.orgName}" (${boot.orgId}).`,
    '',
    'Sign in (keeps the session token in $SESSION):',
    `  SESSION=$(curl -s -X POST ${base}/auth/login -H 'content-type: application/json' \\`,
    `    -d '{"email":"${boot.email}","password":"<password>"}' | node -pe 'JSON.parse(require("fs").readFileSync(0)).token')`,
    'Issue an API token (its plaintext is shown once, in the answer):',
    `  curl -s -X POST ${base}/orgs/${boot.orgId}/api-tokens -H "authorization: Bearer $SESSION" \\`,
    `    -H 'content-type: application/json' -d '{"name":"ci","scopes":[{"type":"storage","bindingIds":null,"permissions":["read","write"]}],` +
      `"rateLimitPerMinute":60,"rateLimitPerHour":1000,"rateLimitPerDay":10000}'`,
    'Create an enrollment token for an agent:',
    `  curl -s -X POST ${base}/orgs/${boot.orgId}/enrollment-tokens -H "authorization: Bearer $SESSION" \\`,
    `    -H 'content-type: application/json' -d '{}'`,
  ];
}

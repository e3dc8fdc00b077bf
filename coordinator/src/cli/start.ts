import type { Command } from 'commander';
import { createLogger } from '../logger.js';
import { installSignalHandlers, startServer } from '../server.js';
import { configOrExit, withServerOptions } from './common.js';

export function configureStartCommand(program: Command): void {
  withServerOptions(program.command('start'))
    .description('run the coordinator (migrates the database and bootstraps an empty one first)')
    .action(async (flags: Record<string, string | undefined>) => {
      const config = configOrExit(flags);
      const logger = createLogger(config.logLevel);
      let server;
      try {
        server = await startServer(config, logger);
      } catch (error) {
        logger.fatal({ err: error }, 'could not start');
        process.stderr.write(`drover-coordinator: could not start: ${(error as Error).message}\n`);
        process.exit(1);
      }
      installSignalHandlers(server, logger);
      const base = `${config.publicUrl}/v1`;
      const lines = [`Drover coordinator listening on ${server.url} (API: ${base})`];
      const boot = server.coordinator.bootstrap;
      if (boot.created) {
        lines.push(
          `Bootstrapped owner ${boot.email} of organization "${boot.orgName}" (${boot.orgId}).`,
          '',
          'Sign in:',
          `  curl -s -X POST ${base}/auth/login -H 'content-type: application/json' \\`,
          `    -d '{"email":"${boot.email}","password":"<password>"}'`,
          'Issue an API token (with the session token from the login answer):',
          `  curl -s -X POST ${base}/orgs/${boot.orgId}/api-tokens -H "authorization: Bearer $SESSION" \\`,
          `    -H 'content-type: application/json' -d '{"name":"ci","scopes":[{"type":"agent","agentIds":[]}],` +
            `"rateLimitPerMinute":60,"rateLimitPerHour":1000,"rateLimitPerDay":10000}'`,
        );
      }
      process.stdout.write(`${lines.join('\n')}\n`);
    });
}

import type { Command } from 'commander';
import { bootstrapIfEmpty } from '../domain/orgs/bootstrap.js';
import { createLogger } from '../logger.js';
import { openStore } from '../store.js';
import { systemClock } from '../util/clock.js';
import { configOrExit, lockDataDirOrExit, withServerOptions } from './common.js';

export function configureBootstrapCommand(program: Command): void {
  withServerOptions(program.command('bootstrap'))
    .description(
      'create the first owner and organization from DROVER_BOOTSTRAP_EMAIL/_PASSWORD/_ORG in an empty database, then exit',
    )
    .action(async (flags: Record<string, string | undefined>) => {
      const config = configOrExit(flags);
      if (!config.bootstrap) {
        process.stderr.write('drover-coordinator: set DROVER_BOOTSTRAP_EMAIL and DROVER_BOOTSTRAP_PASSWORD\n');
        process.exit(2);
      }
      lockDataDirOrExit(config.dataDir); // not under a running coordinator
      let store;
      try {
        store = await openStore(config, createLogger('silent'));
      } catch (error) {
        process.stderr.write(`drover-coordinator: ${(error as Error).message}\n`);
        process.exit(1);
      }
      try {
        const result = await bootstrapIfEmpty(store.repos, config.bootstrap, systemClock);
        if (!result.created) {
          process.stderr.write('drover-coordinator: the database already has users; nothing bootstrapped\n');
          process.exitCode = 1;
          return;
        }
        process.stdout.write(`owner ${result.email} of organization "${result.orgName}" (${result.orgId})\n`);
      } finally {
        await store.close();
      }
    });
}

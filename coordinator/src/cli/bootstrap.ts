import type { Command } from 'commander';
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
      lockDataDirOrExit(config.dataDir, 'bootstrap'); // not under a running coordinator
      const { bootstrapIfEmpty } = await import('../domain/orgs/bootstrap.js');
      const { createLogger } = await import('../logger.js');
      const { openStore } = await import('../store.js');
      const { systemClock } = await import('../util/clock.js');
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

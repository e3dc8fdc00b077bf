import type { Command } from 'commander';
import { databaseFile, openDatabase } from '../db/database.js';
import { migrate } from '../db/migrate.js';
import { createSqliteRepositories } from '../sqlite-repositories.js';
import { bootstrapIfEmpty } from '../domain/bootstrap.js';
import { systemClock } from '../util/clock.js';
import { configOrExit, lockDataDirOrExit, refuseUnfinishedDatabase, withServerOptions } from './common.js';

export function configureBootstrapCommand(program: Command): void {
  withServerOptions(program.command('bootstrap'))
    .description(
      'create the first owner and organization from DROVER_BOOTSTRAP_EMAIL/_PASSWORD/_ORG in an empty database, then exit',
    )
    .action(async (flags: Record<string, string | undefined>) => {
      const config = configOrExit(flags);
      refuseUnfinishedDatabase(config, 'bootstrap');
      if (!config.bootstrap) {
        process.stderr.write('drover-coordinator: set DROVER_BOOTSTRAP_EMAIL and DROVER_BOOTSTRAP_PASSWORD\n');
        process.exit(2);
      }
      lockDataDirOrExit(config.dataDir); // not under a running coordinator
      const db = openDatabase(databaseFile(config.dataDir));
      try {
        migrate(db);
        const result = await bootstrapIfEmpty(createSqliteRepositories(db), config.bootstrap, systemClock);
        if (!result.created) {
          process.stderr.write('drover-coordinator: the database already has users; nothing bootstrapped\n');
          process.exitCode = 1;
          return;
        }
        process.stdout.write(`owner ${result.email} of organization "${result.orgName}" (${result.orgId})\n`);
      } finally {
        db.close();
      }
    });
}

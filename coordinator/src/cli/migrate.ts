import type { Command } from 'commander';
import { databaseFile, openDatabase } from '../db/database.js';
import { migrate } from '../db/migrate.js';
import { configOrExit, lockDataDirOrExit, refuseUnfinishedDatabase, withServerOptions } from './common.js';

export function configureMigrateCommand(program: Command): void {
  withServerOptions(program.command('migrate'))
    .description('apply pending database migrations and exit (start does this too)')
    .action((flags: Record<string, string | undefined>) => {
      const config = configOrExit(flags);
      refuseUnfinishedDatabase(config, 'migrate');
      lockDataDirOrExit(config.dataDir); // not under a running coordinator
      const db = openDatabase(databaseFile(config.dataDir));
      try {
        const { applied, current } = migrate(db);
        for (const m of applied) process.stdout.write(`applied ${String(m.version).padStart(4, '0')}_${m.name}\n`);
        process.stdout.write(`database at version ${current}\n`);
      } finally {
        db.close();
      }
    });
}

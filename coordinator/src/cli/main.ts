#!/usr/bin/env -S node --max-semi-space-size=4
import './supported-node.js';
import { Command, CommanderError } from 'commander';
import { versionWithRuntime } from '@drover/shared';
import { configureBackupCommand } from './backup.js';
import { configureBootstrapCommand } from './bootstrap.js';
import { configureCopyDataCommand } from './copy-data.js';
import { configureMigrateCommand } from './migrate.js';
import { configureRestoreCommand } from './restore.js';
import { configureStartCommand } from './start.js';
import { COORDINATOR_VERSION } from '../version.js';

/**
 * `drover-coordinator <command>`. Exit status: 0 done, 1 failed, 2 bad usage or configuration.
 */
const program = new Command('drover-coordinator')
  .description('Drover coordinator: dispatches workflow runs to edge agents, stores files, rolls out releases')
  .version(versionWithRuntime(COORDINATOR_VERSION))
  .showHelpAfterError()
  .exitOverride();

configureStartCommand(program);
configureMigrateCommand(program);
configureBootstrapCommand(program);
configureCopyDataCommand(program);
configureBackupCommand(program);
configureRestoreCommand(program);

try {
  await program.parseAsync(process.argv);
} catch (error) {
  if (error instanceof CommanderError) {
    // Help and version exit 0; unknown commands, options and missing arguments are usage errors.
    process.exit(error.exitCode === 0 ? 0 : 2);
  }
  process.stderr.write(`drover-coordinator: ${(error as Error).message}\n`);
  process.exit(1);
}

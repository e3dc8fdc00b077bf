#!/usr/bin/env node
import { Command } from 'commander';
import { configureBootstrapCommand } from './bootstrap.js';
import { configureMigrateCommand } from './migrate.js';
import { configureStartCommand } from './start.js';
import { COORDINATOR_VERSION } from '../version.js';

const program = new Command('drover-coordinator')
  .description('Drover coordinator: dispatches workflow runs to edge agents, stores files, rolls out releases')
  .version(COORDINATOR_VERSION)
  .showHelpAfterError();

configureStartCommand(program);
configureMigrateCommand(program);
configureBootstrapCommand(program);

await program.parseAsync(process.argv);

import type { Command } from 'commander';
import type { Runtime } from '../runtime.js';
import { configureAppWindowCommand } from './app-window-command.js';

/** `drover app ...`: one over-the-air application of the organization (a session). */
export function configureAppCommand(program: Command, rt: Runtime): void {
  const app = program.command('app').description('one over-the-air application of the organization (a session)');
  configureAppWindowCommand(app, rt);
}

import { Command, CommanderError } from 'commander';
import { showControls, versionWithRuntime } from '@drover/shared';
import { isAgentError } from '../errors.js';
import { AGENT_VERSION } from '../version.js';
import { configureEnrollCommand } from './enroll-command.js';
import { configureStatusCommand } from './status-command.js';
import { configureWorkflowsCommand } from './workflows-command.js';
import { configureLogsCommand } from './logs-command.js';
import { configureRunCommand } from './run-command.js';
import { CliExit, CONFIG_ERROR_EXIT_CODE, exitQuietlyOnBrokenPipe, processIo, type CliIo } from './io.js';

export { CliExit, processIo, type CliIo };

export function buildProgram(io: CliIo): Command {
  const program = new Command('drover-agent')
    .description('Drover agent: enrolls this machine with a coordinator and runs its local workflows')
    .version(versionWithRuntime(AGENT_VERSION))
    // After a usage error, one line that says where the help is, not the help itself: under
    // systemd, `systemctl status` shows the last 10 lines of the journal, which 22 lines of usage
    // would fill, hiding the error (a bad value in /etc/drover/agent.env, say).
    .showHelpAfterError('see `drover-agent --help`')
    .exitOverride()
    .configureOutput({ writeOut: io.out, writeErr: io.err });
  configureEnrollCommand(program, io);
  configureRunCommand(program, io);
  configureStatusCommand(program, io);
  configureWorkflowsCommand(program, io);
  configureLogsCommand(program, io);
  if (io === processIo) {
    program.hook('preAction', (_program, command) => {
      if (command.name() !== 'run') exitQuietlyOnBrokenPipe();
    });
  }
  for (const command of program.commands)
    command
      .showHelpAfterError(`see \`drover-agent ${command.name()} --help\``)
      .exitOverride()
      .configureOutput({ writeOut: io.out, writeErr: io.err });
  return program;
}

/**
 * Runs the CLI and returns its exit code: 0 on success, 1 when the operation failed (with a
 * one-line `drover-agent: error: ...` on stderr), 2 for a bad usage or setting (a flag, a variable
 * of agent.env: restarting the service does not fix it, and its unit does not).
 */
export async function runCli(argv: readonly string[], io: CliIo = processIo): Promise<number> {
  try {
    await buildProgram(io).parseAsync(argv, { from: 'user' });
    return 0;
  } catch (error) {
    if (error instanceof CliExit) return error.exitCode;
    if (error instanceof CommanderError) {
      // commander printed the message; help and --version end 0, every other case is a bad usage
      return error.exitCode === 0 ? 0 : CONFIG_ERROR_EXIT_CODE;
    }
    if (isAgentError(error)) {
      // A coordinator's refusal is in it: shown, never obeyed by the terminal.
      io.err(`drover-agent: error: ${showControls(error.message)}\n`);
      return error.code === 'bad_config' ? CONFIG_ERROR_EXIT_CODE : 1;
    }
    io.err(`drover-agent: unexpected error: ${showControls((error as Error)?.stack ?? String(error))}\n`);
    return 1;
  }
}

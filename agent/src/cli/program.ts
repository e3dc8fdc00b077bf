import { Command, CommanderError } from 'commander';
import { showControls, versionWithRuntime } from '@drover/shared';
import { isAgentError } from '../errors.js';
import { AGENT_VERSION } from '../version.js';
import { stateDirOf } from '../state/paths.js';
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
      if (error.exitCode === 0) return 0;
      return (await rollBackOnRefusedSettings(argv, error.message, io)) ?? CONFIG_ERROR_EXIT_CODE;
    }
    if (isAgentError(error)) {
      // A coordinator's refusal is in it: shown, never obeyed by the terminal.
      io.err(`drover-agent: error: ${showControls(error.message)}\n`);
      if (error.code !== 'bad_config') return 1;
      return (await rollBackOnRefusedSettings(argv, error.message, io)) ?? CONFIG_ERROR_EXIT_CODE;
    }
    io.err(`drover-agent: unexpected error: ${showControls((error as Error)?.stack ?? String(error))}\n`);
    return 1;
  }
}

/**
 * `run` refused a setting: when this binary is a self-update on trial, the previous binary is put
 * back and the agent exits 75 for it to start (docs/agent.md, "Self-update"), rather than 2, which
 * the unit does not restart. Null otherwise.
 */
async function rollBackOnRefusedSettings(argv: readonly string[], problem: string, io: CliIo): Promise<number | null> {
  if (argv[0] !== 'run') return null;
  let stateDir: string;
  try {
    const at = argv.findIndex((arg) => arg === '--state-dir' || arg.startsWith('--state-dir='));
    const flag = at < 0 ? undefined : argv[at]!.includes('=') ? argv[at]!.slice('--state-dir='.length) : argv[at + 1];
    stateDir = stateDirOf(flag);
  } catch {
    return null; // the state directory is what was refused
  }
  const { rollBackRefusedSettings } = await import('../self-update/refused-settings.js');
  const { RESTART_EXIT_CODE } = await import('../self-update/builtin-workflow.js');
  const said = rollBackRefusedSettings(stateDir, problem.replace(/^error: /, '').trim());
  if (said === null) return null;
  io.err(`drover-agent: ${showControls(said)}\n`);
  return said.startsWith('self-update to ') ? RESTART_EXIT_CODE : null;
}

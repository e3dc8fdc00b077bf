import { Command, CommanderError } from 'commander';
import { versionWithRuntime } from '@drover/shared';
import { configureAgentCommand } from './commands/agent-command.js';
import { configureAgentsCommand } from './commands/agents-command.js';
import { configureOverviewCommand } from './commands/overview-command.js';
import { configureApiTokenCommand } from './commands/api-token-command.js';
import { configureAuditCommand } from './commands/audit-command.js';
import { configureAppCommand } from './commands/app-command.js';
import { configureBatchCommand } from './commands/batch-command.js';
import { configureCancelCommand } from './commands/cancel-command.js';
import { configureCompletionCommand } from './commands/completion-command.js';
import { configureEnrollmentTokenCommand } from './commands/enrollment-token-command.js';
import { configureFilesCommand } from './commands/files-command.js';
import { configureInvitationCommand } from './commands/invitation-command.js';
import { configureJobCommand } from './commands/job-command.js';
import { configureJobsCommand } from './commands/jobs-command.js';
import { configureLoginCommand } from './commands/login-command.js';
import { configureLogoutCommand } from './commands/logout-command.js';
import { configureMemberCommand } from './commands/member-command.js';
import { configureOrgCommand } from './commands/org-command.js';
import { configurePasswordCommand } from './commands/password-command.js';
import { configureReleaseCommand } from './commands/release-command.js';
import { configureRolloutCommand } from './commands/rollout-command.js';
import { configureRunCommand } from './commands/run-command.js';
import { configureTokenCommand } from './commands/token-command.js';
import { configureTriggerCommand } from './commands/trigger-command.js';
import { configureWorkflowCommand } from './commands/workflow-command.js';
import { configureWorkflowsCommand } from './commands/workflows-command.js';
import { CliError, CliExit } from './errors.js';
import { EXIT } from './exit-codes.js';
import { showingControls } from './output/terminal.js';
import { processRuntime, type Runtime } from './runtime.js';
import { CLI_VERSION } from './version.js';

export function buildProgram(runtime: Runtime): Command {
  const rt = showingControls(runtime);
  const program = new Command('drover')
    .description('Drover from the command line: run triggers, move files, follow jobs, manage an organization')
    .version(versionWithRuntime(CLI_VERSION))
    .option('--url <url>', 'the coordinator, e.g. https://drover.example.com (env DROVER_URL)')
    .option('--token <token>', 'an API token, drv_... (prefer env DROVER_TOKEN: a flag shows in ps)')
    .option('--org <id-or-name>', 'the organization of session commands (env DROVER_ORG; default: your only one)')
    .addHelpText('after', '\nDocumentation: docs/cli.md. Exit codes: `drover run --help`.\n');
  // With an API token (or a session)
  configureRunCommand(program, rt);
  configureFilesCommand(program, rt);
  configureAgentsCommand(program, rt);
  configureWorkflowsCommand(program, rt);
  configureTokenCommand(program, rt);
  // Sessions
  configureLoginCommand(program, rt);
  configureLogoutCommand(program, rt);
  configurePasswordCommand(program, rt);
  configureOverviewCommand(program, rt);
  configureJobsCommand(program, rt);
  configureJobCommand(program, rt);
  configureCancelCommand(program, rt);
  configureBatchCommand(program, rt);
  configureReleaseCommand(program, rt);
  configureAppCommand(program, rt);
  configureRolloutCommand(program, rt);
  configureEnrollmentTokenCommand(program, rt);
  configureTriggerCommand(program, rt);
  configureApiTokenCommand(program, rt);
  configureMemberCommand(program, rt);
  configureInvitationCommand(program, rt);
  configureOrgCommand(program, rt);
  configureAuditCommand(program, rt);
  configureAgentCommand(program, rt);
  configureWorkflowCommand(program, rt);
  configureCompletionCommand(program, rt);
  addHelpCommands(program);
  forEachCommand(program, (command) =>
    command
      .exitOverride()
      .showHelpAfterError('(run with --help for usage)')
      .configureOutput({
        writeOut: rt.out,
        writeErr: rt.err,
        // One style for every error line: `drover: <message>`.
        outputError: (text, write) => write(text.replace(/^error: /, 'drover: ')),
      }),
  );
  return program;
}

function forEachCommand(command: Command, apply: (command: Command) => void): void {
  apply(command);
  for (const sub of command.commands) forEachCommand(sub, apply);
}

/**
 * `help [command...]` on the program and on each group, where commander puts its own, which reads
 * one name (`drover help member add` showed the help of `member`): the help of the command the
 * words name from there, and a word that names none is the error of an unknown command (exit 2),
 * where commander showed the group's help.
 */
function addHelpCommands(command: Command): void {
  for (const sub of command.commands) addHelpCommands(sub);
  // Where commander would add its own: a group, whose words are its subcommands' names.
  if (command.commands.length === 0 || command.commands.some((c) => c.name() === 'help')) return;
  command
    .command('help')
    .description('display help for command')
    .argument('[command...]', 'the command, its subcommand after it (drover help member add)')
    .action((words: string[]) => showHelpOf(command, words));
}

function showHelpOf(group: Command, words: readonly string[]): void {
  let target = group;
  for (const [i, word] of words.entries()) {
    const sub = target.commands.find((c) => c.name() === word || c.aliases().includes(word));
    if (sub === undefined) {
      // As `drover nope` says it: `drover: unknown command 'nope'`, then the pointer to --help.
      return target.error(`error: unknown command '${words.slice(0, i + 1).join(' ')}'`, {
        code: 'commander.unknownCommand',
      });
    }
    target = sub;
  }
  target.help();
}

/**
 * Runs `drover <argv>` and returns its exit code (exit-codes.ts). A failure is one line on
 * stderr, `drover: <message>`, the API's own message when the API refused the call. Whatever it
 * prints shows its control characters instead of letting the terminal obey them (output/terminal.ts).
 */
export async function runCli(argv: readonly string[], runtime: Runtime = processRuntime()): Promise<number> {
  const rt = showingControls(runtime);
  try {
    await buildProgram(rt).parseAsync(argv, { from: 'user' });
    return EXIT.success;
  } catch (error) {
    if (error instanceof CliExit) return error.exitCode;
    if (error instanceof CommanderError) {
      // commander printed the message (or the help, or the version: `--help`, `drover help [command]`)
      return error.exitCode === 0 ? EXIT.success : EXIT.usage;
    }
    if (error instanceof CliError) {
      rt.err(`drover: ${error.message}\n`);
      return error.exitCode;
    }
    rt.err(`drover: ${describeUnexpected(error, rt.env.DROVER_DEBUG)}\n`);
    return EXIT.usage;
  }
}

/**
 * A failure the command line did not foresee (a bug, or an answer of a shape it cannot read), in
 * one line; its stack only when `DROVER_DEBUG` is set (to anything but `0` or `false`).
 */
export function describeUnexpected(error: unknown, debug: string | undefined): string {
  const stackWanted = debug !== undefined && debug !== '' && debug !== '0' && debug !== 'false';
  if (stackWanted && error instanceof Error && error.stack) return `unexpected error: ${error.stack}`;
  const what = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  return `unexpected error: ${what.replace(/\s*\n\s*/g, ' ')} (set DROVER_DEBUG=1 for the details)`;
}

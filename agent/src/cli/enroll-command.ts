import type { Command } from 'commander';
import { describeOffset, LARGE_OFFSET_MS } from '../http/server-clock.js';
import { stateDirOf } from '../state/paths.js';
import { CA_FILE_HELP } from './run-command.js';
import type { CliIo } from './io.js';

interface EnrollFlags {
  url: string;
  token: string;
  name?: string;
  stateDir?: string;
  force?: boolean;
  caFile?: string;
}

export function configureEnrollCommand(program: Command, io: CliIo): void {
  program
    .command('enroll')
    .description('register this machine with a coordinator using a single-use enrollment token')
    .requiredOption('--url <base_url>', 'the coordinator URL, e.g. https://drover.example.com (with or without /v1)')
    .requiredOption('--token <token>', 'the enrollment token (drve_...) created in the dashboard')
    .option('--name <name>', 'the agent name shown in the dashboard (default: the hostname)')
    .option(
      '--state-dir <dir>',
      'where the key and enrollment live (env DROVER_AGENT_STATE_DIR; default ~/.drover-agent, /var/lib/drover-agent as root)',
    )
    .option('--force', 'enroll again over an existing enrollment, as a new agent with a new key')
    .option('--ca-file <file>', CA_FILE_HELP)
    .action(async (flags: EnrollFlags) => {
      // Loaded here, not at start: the HTTP client is for this command and `run` only.
      const [{ enrollAgent }, { keyFingerprint, showControls }, { configureDispatcher, describeRouteFor }] =
        await Promise.all([import('../enroll.js'), import('@drover/shared'), import('../http/dispatcher.js')]);
      configureDispatcher({ caFile: flags.caFile });
      const stateDir = stateDirOf(flags.stateDir);
      const result = await enrollAgent({
        url: flags.url,
        token: flags.token,
        stateDir,
        name: flags.name,
        force: flags.force,
      });
      const { enrollment, self, replaced } = result;
      const lines = [
        `Enrolled as agent ${enrollment.agentId} ("${self.name}") in organization ${enrollment.orgId}.`,
        `Coordinator:  ${enrollment.url}`,
        `Proxy:        ${describeRouteFor(new URL(enrollment.url))}`,
        `Server key:   ${keyFingerprint(enrollment.serverPublicKey)} (pinned)`,
        `State dir:    ${stateDir}`,
        `Status:       ${self.status} (signed self-check passed)`,
      ];
      if (replaced && replaced.agentId !== enrollment.agentId) {
        lines.push(`The previous enrollment (agent ${replaced.agentId}) was replaced; revoke it in the dashboard.`);
      }
      if (Math.abs(result.clockOffsetMs) >= LARGE_OFFSET_MS) {
        lines.push(
          `Warning:      this machine's clock is ${describeOffset(result.clockOffsetMs)} the coordinator's; ` +
            `the agent signs with the coordinator's time, but set the clock right (NTP)`,
        );
      }
      // The name and status are the coordinator's: shown, never obeyed by the terminal.
      io.out(`${showControls(lines.join('\n'))}\n`);
    });
}

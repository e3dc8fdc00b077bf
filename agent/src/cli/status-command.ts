import type { Command } from 'commander';
import { showControls, showControlsInJson } from '@drover/shared';
import { stateDirOf } from '../state/paths.js';
import { readAgentStatus } from '../status/agent-status.js';
import { formatAgentStatus } from '../status/format-status.js';
import { CliExit, type CliIo } from './io.js';

export function configureStatusCommand(program: Command, io: CliIo): void {
  program
    .command('status')
    .description("show this machine's enrollment (exits 1 when it is not enrolled or its state is damaged)")
    .option('--state-dir <dir>', 'the agent state directory (env DROVER_AGENT_STATE_DIR)')
    .option('--json', 'print the status as JSON')
    .action((flags: { stateDir?: string; json?: boolean }) => {
      const status = readAgentStatus(stateDirOf(flags.stateDir));
      // Names and errors in it may come from the coordinator or a workflow: shown, never obeyed.
      if (flags.json) io.out(`${showControlsInJson(JSON.stringify(status, null, 2))}\n`);
      else io.out(`${showControls(formatAgentStatus(status).join('\n'))}\n`);
      if (!status.enrollment || status.problem) throw new CliExit(1);
    });
}

import fs from 'node:fs';
import type { Command } from 'commander';
import { formatRecord, levelNumber, LEVEL_NAMES, showControls, showControlsInJson } from '@drover/shared';
import { followLogs, readLogs, type LogFilter, type LogLine } from '../logging/read-logs.js';
import { logFile } from '../logging/log-files.js';
import { stateDirOf } from '../state/paths.js';
import { CliExit, processIo, type CliIo } from './io.js';

interface LogsFlags {
  stateDir?: string;
  job?: string;
  level?: string;
  lines?: string;
  follow?: boolean;
  json?: boolean;
  utc?: boolean;
  stacks?: boolean;
}

export function configureLogsCommand(program: Command, io: CliIo): void {
  program
    .command('logs')
    .description("show the agent's log readably, oldest first (also the rotated files)")
    .option('--state-dir <dir>', 'the agent state directory (env DROVER_AGENT_STATE_DIR)')
    .option('--job <id>', 'only lines about this job: its id, or a part of it such as the 8 characters the lines show')
    .option('--level <level>', `only lines at this level or above (${LEVEL_NAMES.join(', ')})`)
    .option('-n, --lines <n>', 'only the last n matching lines (then new ones with --follow)')
    .option('-f, --follow', 'keep printing new lines as they are written (Ctrl-C to stop)')
    .option('--json', 'print the raw JSON lines')
    .option('--utc', 'show times in UTC instead of the local time zone')
    .option('--stacks', 'print error stack traces')
    .action(async (flags: LogsFlags) => {
      const filter: LogFilter = {};
      if (flags.job !== undefined) {
        // As the lines show it (`…e3f40516`) or as the dashboard does: the ellipsis is not part of it.
        const job = flags.job.replace(/^…|…$/g, '');
        if (!/^[0-9a-fA-F-]{1,36}$/.test(job)) {
          io.err(`drover-agent: error: --job expects a job id or a part of it, got \`${flags.job}\`\n`);
          throw new CliExit(2);
        }
        filter.job = job;
      }
      if (flags.level !== undefined) {
        const level = levelNumber(flags.level);
        if (level === null) {
          io.err(`drover-agent: error: --level expects one of ${LEVEL_NAMES.join(', ')}, got \`${flags.level}\`\n`);
          throw new CliExit(2);
        }
        filter.minLevel = level;
      }
      let last: number | null = null;
      if (flags.lines !== undefined) {
        last = /^\d+$/.test(flags.lines) ? Number(flags.lines) : NaN;
        if (!Number.isSafeInteger(last)) {
          io.err(`drover-agent: error: --lines expects a whole number, got \`${flags.lines}\`\n`);
          throw new CliExit(2);
        }
      }

      const stateDir = stateDirOf(flags.stateDir);
      if (!fs.existsSync(stateDir)) {
        // Another directory than the agent's (a typo, another user's default): not "no lines yet".
        io.err(
          `drover-agent: error: no agent state at ${stateDir}: give the agent's own with --state-dir (or DROVER_AGENT_STATE_DIR)\n`,
        );
        throw new CliExit(1);
      }
      const color = io === processIo && process.stdout.isTTY === true && !process.env.NO_COLOR;
      // What a job or a workflow put in the log is shown, never obeyed by the terminal: control
      // characters as `\xHH` (JSON lines stay the same JSON, with `\u00HH` escapes).
      const show = (line: LogLine) => {
        const text = !line.record
          ? showControls(line.text, { lineBreaks: false })
          : flags.json
            ? showControlsInJson(line.text)
            : formatRecord(line.record, { color, utc: flags.utc, stacks: flags.stacks });
        io.out(`${text}\n`);
      };

      let shown = 0;
      const kept: LogLine[] = [];
      const tail = readLogs(stateDir, filter, (line) => {
        shown++;
        if (last === null) show(line);
        else {
          kept.push(line);
          if (kept.length > last) kept.shift();
        }
      });
      kept.forEach(show);
      if (!flags.follow) {
        tail.close();
        if (shown === 0 && !flags.json) {
          const what = filter.job || filter.minLevel ? 'No matching log lines' : 'No log lines yet';
          io.err(`${what} in ${logFile(stateDir)} (and its rotated files).\n`);
        }
        return;
      }
      const stop = new AbortController();
      const onSignal = () => stop.abort();
      process.once('SIGINT', onSignal);
      process.once('SIGTERM', onSignal);
      try {
        await followLogs(tail, filter, show, stop.signal);
      } finally {
        process.off('SIGINT', onSignal);
        process.off('SIGTERM', onSignal);
      }
    });
}

import type { Command } from 'commander';
import { sessionCaller } from '../callers.js';
import type { Api } from '../http/api.js';
import { CliExit } from '../errors.js';
import { EXIT, exitCodeOfStatus } from '../exit-codes.js';
import { describeOutcome, formatLogLine, formatOutput, statusPageUrl } from '../jobs/format-job.js';
import { jobPath, LOG_PAGE, moreLogsAfter, type JobDetail, type LogLine } from '../jobs/job.js';
import { jobAfterWait, readJob, waitForJob } from '../jobs/wait.js';
import { printJson } from '../output/json.js';
import { formatFields } from '../output/table.js';
import { elapsed, shortTime } from '../output/time.js';
import type { Runtime } from '../runtime.js';
import { loadSettings } from '../settings.js';

interface JobFlags {
  logs?: boolean;
  follow?: boolean;
  json?: boolean;
}

export function configureJobCommand(program: Command, rt: Runtime): void {
  program
    .command('job')
    .description('one job: its status, times, output and error (a session)')
    .argument('<job-id>', 'the job')
    .option('--logs', 'print its log lines too')
    .option('--follow', 'print its log lines as they come until it ends, and exit with its outcome (as run --wait)')
    .option('--json', "print the API's answer as JSON")
    .action(async (jobId: string, flags: JobFlags, command: Command) => {
      const { api } = sessionCaller(loadSettings(command.optsWithGlobals(), rt), rt);
      if (flags.json && !flags.follow) return printJson(rt, await api.get(jobPath(jobId)));
      if (flags.follow) {
        const end = await waitForJob(api, jobId, {
          signal: rt.signal,
          onLogs: flags.json ? undefined : (lines) => lines.forEach((line) => rt.out(formatLogLine(line))),
          onOutage: (message) => rt.err(`drover: ${message}\n`),
        });
        // Interrupted too: the job as it is (exit 6), read with a signal of its own.
        if (flags.json) printJson(rt, await jobAfterWait(api, end));
        else rt.out(`Job ${end.job.id} ${describeOutcome(end.job)}\n${formatOutput(end.job.output)}`);
        throw new CliExit(end.ended === 'finished' ? exitCodeOfStatus(end.job.status) : EXIT.stillRunning);
      }
      const job = await readJob(api, jobId, 0, 0);
      rt.out(describeJob(job, api.origin));
      if (flags.logs) {
        rt.out('Logs:\n');
        await eachLogPage(api, jobId, (lines) => lines.forEach((line) => rt.out(formatLogLine(line))));
      }
    });
}

function describeJob(job: JobDetail, origin: string): string {
  return (
    formatFields([
      ['Job', `${job.id}${job.number === undefined ? '' : ` (#${job.number})`}`],
      ['Status', `${job.status}${job.cancelRequestedAt && job.status === 'running' ? ' (cancel requested)' : ''}`],
      ['Outcome', describeOutcome(job)],
      ['Workflow', job.workflowName],
      ['Source', job.source],
      ['Trigger', job.triggerId],
      ['Agent', job.agentId],
      ['Ref', job.ref],
      ['Created', shortTime(job.createdAt)],
      ['Started', shortTime(job.startedAt)],
      ['Finished', shortTime(job.finishedAt)],
      ['Took', elapsed(job.startedAt, job.finishedAt)],
      ['Exit code', job.exitCode === null ? null : String(job.exitCode)],
      ['Error', job.errorMessage],
      ['Log', describeLog(job)],
      ['Page', statusPageUrl(origin, `/api/jobs/${job.id}`)],
    ]) + formatOutput(job.output)
  );
}

/** `1,204 lines`, and how many the coordinator's cap dropped from the middle; null from an older coordinator. */
function describeLog(job: JobDetail): string | null {
  if (job.logsTotal === undefined) return null;
  const lines = `${job.logsTotal.toLocaleString('en-US')} line${job.logsTotal === 1 ? '' : 's'}`;
  if (!job.logsDropped) return lines;
  return `${lines} (${job.logsDropped.toLocaleString('en-US')} more dropped from the middle: the log passed the coordinator's limit)`;
}

/**
 * Every line of the job's log, handed over page after page as each is read: a log of the
 * coordinator's largest size (up to 1 GiB) is never held whole, and the first lines show (or a
 * reader that went away, `| head`, ends the command) without waiting for the last page.
 */
async function eachLogPage(api: Api, jobId: string, onPage: (lines: LogLine[]) => void): Promise<void> {
  for (let after = 0; ;) {
    const page = await readJob(api, jobId, after, LOG_PAGE);
    onPage(page.logs);
    if (!moreLogsAfter(page, LOG_PAGE) || page.logs.length === 0) return;
    after = page.logs[page.logs.length - 1]!.seq;
  }
}

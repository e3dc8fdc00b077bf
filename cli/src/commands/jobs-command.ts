import type { Command } from 'commander';
import { pause } from '@drover/agent/client';
import { JOB_SOURCES, JOB_STATUSES } from '@drover/shared';
import { sessionCaller } from '../callers.js';
import { CliError, Interrupted } from '../errors.js';
import { integerFlag } from '../integer-flag.js';
import { readThroughOutage } from '../http/outage.js';
import type { Job } from '../jobs/job.js';
import { jsonLine, printJson } from '../output/json.js';
import { sayNextPage } from '../output/next-page.js';
import { formatTable } from '../output/table.js';
import { rawOutput } from '../output/terminal.js';
import { ago, elapsed } from '../output/time.js';
import type { Runtime } from '../runtime.js';
import { idFlag } from '../session/lookups.js';
import { loadSettings } from '../settings.js';

interface JobsFlags {
  status?: string;
  source?: string;
  trigger?: string;
  agent?: string;
  batch?: string;
  limit: string;
  cursor?: string;
  watch?: boolean;
  json?: boolean;
}

const WATCH_EVERY_MS = 2000;
/** The sources of the jobs the list holds (an update job's, `ota`, is never in it). */
const SOURCES = JOB_SOURCES.filter((s) => s !== 'ota');

export function configureJobsCommand(program: Command, rt: Runtime): void {
  program
    .command('jobs')
    .description("the organization's trigger jobs, newest first (a session)")
    .option('--status <status>', `only jobs in this status (${JOB_STATUSES.join(', ')})`)
    .option('--source <source>', `only jobs started this way (${SOURCES.join(', ')})`)
    .option('--trigger <id>', 'only the jobs of this trigger')
    .option('--agent <id>', 'only the jobs of this agent')
    .option('--batch <id>', 'only the jobs of this batch (drover batch list)')
    .option('--limit <n>', 'how many (1 to 200)', '20')
    .option('--cursor <cursor>', 'the page after the one that ended with this cursor (printed when more follow)')
    .option(
      '--watch',
      'keep the list on screen, refreshed every 2 s (a new or changed job: a line, outside a terminal)',
    )
    .option('--json', "print the API's answer as JSON (with --watch: one job per line, as it appears or changes)")
    .action(async (flags: JobsFlags, command: Command) => {
      const limit = integerFlag('--limit', flags.limit, 1, 200);
      if (flags.status !== undefined && !(JOB_STATUSES as readonly string[]).includes(flags.status)) {
        throw new CliError(`--status: expected one of ${JOB_STATUSES.join(', ')}, got \`${flags.status}\``);
      }
      if (flags.source !== undefined && !SOURCES.includes(flags.source as (typeof SOURCES)[number])) {
        throw new CliError(`--source: expected one of ${SOURCES.join(', ')}, got \`${flags.source}\``);
      }
      if (flags.watch && flags.cursor !== undefined) {
        throw new CliError('--cursor: a watch shows the newest jobs; drop --cursor or --watch');
      }
      const triggerId = idFlag('--trigger', 'trigger', flags.trigger);
      const agentId = idFlag('--agent', 'agent', flags.agent);
      const batchId = idFlag('--batch', 'batch', flags.batch);
      const caller = sessionCaller(loadSettings(command.optsWithGlobals(), rt), rt);
      const path = `/orgs/${await caller.orgId()}/jobs`;
      const query = { status: flags.status, source: flags.source, triggerId, agentId, batchId, limit };
      if (flags.watch) return watch(rt, () => caller.api.get<Job[]>(path, query), flags.json === true);
      const answer = await caller.api.call<Job[]>('GET', path, { query: { ...query, cursor: flags.cursor } });
      if (flags.json) printJson(rt, answer.body);
      else rt.out(answer.body.length === 0 ? 'No jobs.\n' : jobTable(answer.body));
      sayNextPage(rt, answer.headers, 'jobs', 'drover jobs', {
        status: flags.status,
        source: flags.source,
        trigger: triggerId,
        agent: agentId,
        batch: batchId,
        limit: limit === 20 ? undefined : limit,
      });
    });
}

/**
 * Refreshes the list until interrupted (which ends the command with 0). On a terminal the table
 * is redrawn; elsewhere (a log, a pipe) each job that appears or changes status is one line. Once
 * the first look answered, an outage of the coordinator (no answer, a 502, 503 or 504: a restart)
 * is waited out, said once on stderr, as during a wait (docs/cli.md, "Waits and outages"); the
 * first look's failure ends the command, as without `--watch` (a wrong `--url` is said at once).
 */
async function watch(rt: Runtime, list: () => Promise<Job[]>, json: boolean): Promise<void> {
  const redraw = rt.stdoutIsTTY && !json;
  const seen = new Map<string, string>();
  let answered = false;
  for (;;) {
    let jobs: Job[];
    try {
      if (answered) {
        const looked = await readThroughOutage(list, {
          signal: rt.signal,
          deadline: Number.POSITIVE_INFINITY,
          onOutage: (message) => rt.err(`drover: ${message}\n`),
        });
        if (!('value' in looked)) throw looked.gaveUp; // no deadline: never
        jobs = looked.value;
      } else jobs = await list();
    } catch (error) {
      if (rt.signal.aborted || error instanceof Interrupted) return;
      throw error;
    }
    answered = true;
    if (redraw) {
      rawOutput(rt).out('\x1b[H\x1b[2J');
      rt.out(`${jobTable(jobs)}\nEvery ${WATCH_EVERY_MS / 1000}s; Ctrl-C to stop.\n`);
    } else {
      for (const job of [...jobs].reverse()) {
        if (seen.get(job.id) === job.status) continue;
        seen.set(job.id, job.status);
        rt.out(json ? jsonLine(job) : jobLine(job));
      }
    }
    try {
      await pause(WATCH_EVERY_MS, rt.signal);
    } catch {
      return;
    }
  }
}

export function jobTable(jobs: Job[]): string {
  const rows = jobs.map((j) => [
    j.id,
    j.number === undefined ? null : `#${j.number}`,
    j.status,
    j.workflowName,
    j.source,
    j.ref,
    ago(j.createdAt),
    elapsed(j.startedAt, j.finishedAt),
  ]);
  return formatTable(['ID', 'NUMBER', 'STATUS', 'WORKFLOW', 'SOURCE', 'REF', 'CREATED', 'TOOK'], rows);
}

function jobLine(job: Job): string {
  return `${new Date().toISOString()} ${job.id} ${job.status} ${job.workflowName}${job.ref ? ` ${job.ref}` : ''}\n`;
}

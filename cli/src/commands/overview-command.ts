import type { Command } from 'commander';
import type { Schema } from '@drover/shared/api';
import { sessionCaller } from '../callers.js';
import { integerFlag } from '../integer-flag.js';
import { printJson } from '../output/json.js';
import { formatTable } from '../output/table.js';
import { ago } from '../output/time.js';
import type { Runtime } from '../runtime.js';
import { loadSettings } from '../settings.js';
import { shortId } from '@drover/shared';

type Overview = Schema<'Overview'>;

const OUTCOMES = [
  ['success', 'succeeded'],
  ['failed', 'failed'],
  ['timed_out', 'timed out'],
  ['cancelled', 'cancelled'],
  ['rejected', 'rejected'],
] as const;

/** `drover overview`: the organization at a glance, as the dashboard's home page shows it (a session). */
export function configureOverviewCommand(program: Command, rt: Runtime): void {
  program
    .command('overview')
    .description(
      "the organization at a glance: agents by status, the last hours' jobs by outcome, failures, running jobs, rollouts, next schedules (a session)",
    )
    .option('--hours <n>', 'the hours the jobs are counted over (1 to 168)', '24')
    .option('--json', "print the API's answer as JSON (with the jobs of each hour)")
    .action(async (flags: { hours: string; json?: boolean }, command: Command) => {
      const hours = integerFlag('--hours', flags.hours, 1, 168);
      const caller = sessionCaller(loadSettings(command.optsWithGlobals(), rt), rt);
      const overview = await caller.api.get<Overview>(`/orgs/${await caller.orgId()}/overview`, { hours });
      if (flags.json) return printJson(rt, overview);
      rt.out(overviewText(overview, hours));
    });
}

/** The overview in a few lines and tables, for a person at a terminal. */
export function overviewText(o: Overview, hours: number, now = Date.now()): string {
  const { agents, jobs } = o;
  const sum = (key: (typeof OUTCOMES)[number][0]) => jobs.buckets.reduce((n, b) => n + b[key], 0);
  const lines = [
    `Agents:  ${agents.connected} connected, ${agents.disconnected} disconnected, ${agents.pending} never connected, ${agents.revoked} revoked`,
    `Jobs, last ${hours} h:  ${jobs.total} (${OUTCOMES.map(([key, words]) => `${sum(key)} ${words}`).join(', ')}); ${o.running.length}${o.running.length >= 100 ? '+' : ''} running now`,
  ];
  const section = (title: string, empty: string, table: string | null) => lines.push('', title, table ?? `  ${empty}`);
  const named = (name: string | null, id: string | null, none: string) => name ?? (id === null ? none : shortId(id));
  const jobRows = (list: Overview['running'], when: (j: Overview['running'][number]) => string) =>
    list.map((j) => [
      `#${j.number}`,
      j.workflowName,
      j.status,
      named(j.agentName, j.agentId, 'waiting'),
      named(j.triggerName, j.triggerId, '-'),
      when(j),
    ]);
  const table = (head: string[], rows: string[][]) =>
    rows.length === 0
      ? null
      : formatTable(head, rows)
          .split('\n')
          .map((l) => (l ? `  ${l}` : l))
          .join('\n')
          .trimEnd();
  section(
    'Recent failures:',
    'none',
    table(
      ['JOB', 'WORKFLOW', 'STATUS', 'AGENT', 'TRIGGER', 'ENDED'],
      jobRows(o.recentFailures, (j) => ago(j.finishedAt, now)),
    ),
  );
  section(
    'Running:',
    'none',
    table(
      ['JOB', 'WORKFLOW', 'STATUS', 'AGENT', 'TRIGGER', 'STARTED'],
      jobRows(o.running, (j) => ago(j.startedAt, now)),
    ),
  );
  section(
    'Rollouts in progress:',
    'none',
    table(
      ['APP', 'VERSION', 'CHANNEL', 'STATUS', 'WAVE'],
      o.rollouts.map((r) => [
        r.applicationSlug,
        r.version,
        r.channel,
        r.pausedReason ? `${r.status} (${r.pausedReason})` : r.status,
        `${r.currentWave + 1} of ${r.waves.length}`,
      ]),
    ),
  );
  section(
    'Next scheduled runs:',
    'none',
    table(
      ['TRIGGER', 'AT', 'IN'],
      o.nextCronRuns.map((r) => [r.name, r.at, ago(r.at, now)]),
    ),
  );
  return `${lines.join('\n')}\n`;
}

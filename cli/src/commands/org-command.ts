import { formatBytes } from '@drover/agent/client';
import type { RequestBody, Schema } from '@drover/shared/api';
import type { Command } from 'commander';
import { sessionCaller } from '../callers.js';
import { CliError } from '../errors.js';
import { printJson } from '../output/json.js';
import { formatFields, formatTable } from '../output/table.js';
import { ago, shortTime } from '../output/time.js';
import type { Runtime } from '../runtime.js';
import { loadSettings } from '../settings.js';

type RetentionView = Schema<'RetentionView'>;
type OrgView = Schema<'OrgView'>;
type RetentionChange = RequestBody<'updateOrg'>['retention'];
type Field = keyof RetentionView['retention'];
type Deleted = NonNullable<RetentionView['lastSweep']>['deleted'];

/** Each value: its option and its words. */
const FIELDS: readonly { field: Field; flag: string; option: Exclude<keyof RetentionFlags, 'json'>; what: string }[] = [
  { field: 'jobsDays', flag: '--jobs-days', option: 'jobsDays', what: 'ended jobs' },
  { field: 'failedJobsDays', flag: '--failed-jobs-days', option: 'failedJobsDays', what: 'failed jobs' },
  { field: 'auditDays', flag: '--audit-days', option: 'auditDays', what: 'audit entries' },
  { field: 'occurrencesDays', flag: '--occurrences-days', option: 'occurrencesDays', what: 'cron occurrences' },
];

const DELETED: readonly { kind: keyof Deleted; what: string }[] = [
  { kind: 'jobs', what: 'jobs' },
  { kind: 'logLines', what: 'log lines' },
  { kind: 'auditEntries', what: 'audit entries' },
  { kind: 'occurrences', what: 'cron occurrences' },
  { kind: 'batches', what: 'batches' },
  { kind: 'rolloutEvents', what: 'rollout history' },
];

interface RetentionFlags {
  jobsDays?: string;
  failedJobsDays?: string;
  auditDays?: string;
  occurrencesDays?: string;
  json?: boolean;
}

/** `drover org retention`: the organization's settings (a session). */
export function configureOrgCommand(program: Command, rt: Runtime): void {
  const group = program.command('org').description('the organization of --org (a session)');

  group
    .command('retention')
    .description(
      'show how long the organization keeps ended jobs, audit entries and cron occurrences (and the database size, ' +
        'the last sweep); with a value option, change it (owners; docs/operations.md, "Retention")',
    )
    .option('--jobs-days <days>', 'jobs that ended success, cancelled or rejected, with their logs')
    .option('--failed-jobs-days <days>', 'jobs that failed or timed out, with their logs')
    .option('--audit-days <days>', 'audit entries, and the history of staged rollouts that ended')
    .option('--occurrences-days <days>', "cron occurrences (a trigger's schedule history)")
    .option('--json', "print the API's answer as JSON")
    .addHelpText(
      'after',
      "\nDays are whole, from 1 to 3650; `default` returns a value to the coordinator's setting.\n" +
        'Example: drover org retention --jobs-days 30 --audit-days default\n',
    )
    .action(async (flags: RetentionFlags, command: Command) => {
      const change = retentionChange(flags);
      const caller = sessionCaller(loadSettings(command.optsWithGlobals(), rt), rt);
      const orgId = await caller.orgId();
      if (change) {
        const org = await caller.api.patch<OrgView>(`/orgs/${orgId}`, {
          retention: change,
        } satisfies RequestBody<'updateOrg'>);
        if (flags.json) return printJson(rt, org);
        rt.out(`Changed the retention of ${org.name}; the next sweep deletes what is older.\n`);
      }
      const view = await caller.api.get<RetentionView>(`/orgs/${orgId}/retention`);
      if (flags.json) return printJson(rt, view);
      rt.out(change ? retentionTable(view) : describeRetention(view));
    });
}

/** The change the value options ask for (`default`: null), or null when none is given. */
export function retentionChange(flags: RetentionFlags): RetentionChange | null {
  const change: RetentionChange = {};
  for (const { field, flag, option } of FIELDS) {
    const text = flags[option];
    if (text === undefined) continue;
    const value = text.trim();
    if (value === 'default') change[field] = null;
    else if (/^\d+$/.test(value)) change[field] = Number(value);
    else throw new CliError(`${flag}: expected a whole number of days or \`default\`, got \`${text}\``);
  }
  return Object.keys(change).length > 0 ? change : null;
}

const days = (n: number) => `${n} ${n === 1 ? 'day' : 'days'}`;

/** One row a value: what, how long, and whose value it is. */
export function retentionTable(view: RetentionView): string {
  const rows = FIELDS.map(({ field, what }) => [
    what,
    days(view.retention[field]),
    view.overrides[field] === null
      ? 'coordinator default'
      : `organization (coordinator default ${days(view.defaults[field])})`,
  ]);
  return formatTable(['KEPT', 'FOR', 'SET BY'], rows);
}

/** The retention, then the database's size and the last sweep. */
export function describeRetention(view: RetentionView, now = Date.now()): string {
  const { database: db, lastSweep: sweep } = view;
  const size =
    db.engine === 'sqlite'
      ? `SQLite, ${formatBytes(db.bytes)} on disk, ${formatBytes(db.freeBytes ?? 0)} of it free inside the file (VACUUM gives that back to the disk)`
      : `PostgreSQL, ${formatBytes(db.bytes)} on disk`;
  const fields: [string, string][] = [['Database', size]];
  if (sweep === null) {
    fields.push(['Last sweep', 'none yet since the coordinator started']);
  } else {
    const total = DELETED.reduce((sum, { kind }) => sum + sweep.deleted[kind], 0);
    const kinds = DELETED.filter(({ kind }) => sweep.deleted[kind] > 0).map(
      ({ kind, what }) => `${sweep.deleted[kind]} ${what}`,
    );
    fields.push(
      ['Last sweep', `${shortTime(sweep.startedAt)} (${ago(sweep.startedAt, now)})`],
      ['Deleted', total === 0 ? 'nothing' : `${total} rows: ${kinds.join(', ')}`],
      [
        'Took',
        `${ms(sweep.durationMs)} in ${sweep.batches} ${sweep.batches === 1 ? 'batch' : 'batches'}, the longest ${ms(sweep.longestBatchMs)}`,
      ],
    );
  }
  return `${retentionTable(view)}\n${formatFields(fields)}`;
}

const ms = (n: number) => `${n < 10 ? n.toFixed(1) : Math.round(n)} ms`;

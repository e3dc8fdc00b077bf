import type { RequestBody, Schema } from '@drover/shared/api';
import type { Command } from 'commander';
import { characterCount, nearestName } from '@drover/shared';
import { sessionCaller, type SessionCaller } from '../callers.js';
import { parseDuration } from '../duration.js';
import { ApiError, CliError } from '../errors.js';
import { integerFlag } from '../integer-flag.js';
import { oneSelector, parseSelectorOption } from '../labels/selector.js';
import { jsonLine, printJson } from '../output/json.js';
import { sayNextPage } from '../output/next-page.js';
import { countLine, readEveryPage, totalOf } from '../output/pages.js';
import { formatFields, formatTable } from '../output/table.js';
import { shortTime } from '../output/time.js';
import { collect } from '../params.js';
import type { Runtime } from '../runtime.js';
import { agentId, findTrigger, MAX_TRIGGER_NAME_LENGTH } from '../session/lookups.js';
import { configureTriggerUpdateCommand, RESPONSE_TIMEOUT_BOUNDS, type TriggerFlags } from './trigger-update-command.js';
import { agentNamerFor } from '../agent-names.js';
import { matchFields, readSelectorMatches } from '../labels/selector-matches.js';
import { loadSettings } from '../settings.js';

type Trigger = Schema<'Trigger'>;
type TriggerType = Trigger['type'];

const TRIGGER_TYPES: readonly TriggerType[] = ['webhook', 'cron', 'slack', 'discord'];

/** The coordinator's page of triggers: this command's default, and its most. */
const PAGE = { default: 100, max: 500 };

interface ListFlags {
  type?: string;
  name?: string;
  limit: string;
  cursor?: string;
  all?: boolean;
  json?: boolean;
}

interface CreateFlags extends TriggerFlags {
  name: string;
}

/**
 * `drover trigger create|list|show|update|pause|resume|delete`: webhook triggers are made here (cron
 * and chat ones in the dashboard); any trigger is shown, changed, deleted, and a cron trigger paused
 * and resumed.
 */
export function configureTriggerCommand(program: Command, rt: Runtime): void {
  const group = program.command('trigger').description("the organization's triggers (a session)");

  group
    .command('create')
    .description('create a webhook trigger (run with `drover run <id>`); prints its id')
    .requiredOption('--name <name>', 'its name')
    .option('--agent <id-or-name>', 'the agent it runs on (or --selector)')
    .option(
      '--selector <selector>',
      "instead of --agent: run on the agents a label selector picks, e.g. 'role=gateway,site=berlin' (docs/fleets.md)",
      oneSelector,
    )
    .option(
      '--fanout <fanout>',
      'with --selector: all (the default), each run a batch of one job per agent selected; ' +
        'or one, a pool: each run one job, on one agent selected with room',
    )
    .option(
      '--max-parallel <n>',
      "with --selector and --fanout all: at most n of a batch's jobs at a time (default: all at once)",
    )
    .option('--workflow <name>', 'the one workflow it runs')
    .option('--any-workflow', 'any workflow of the agent, named by each run (drover run --workflow)')
    .option('--sync', 'answer a run once its job ended (default: at once, async)')
    .option('--response-timeout <duration>', 'with --sync: the longest wait, 1s to 10m (default 30s)')
    .option('--allowed-ref <ref>', 'a ref runs must give (repeatable; default: any)', collect)
    .option('--allow-debug', 'let runs ask for debug mode')
    .option('--json', "print the API's answer as JSON")
    .action(async (flags: CreateFlags, command: Command) => {
      if ((flags.workflow === undefined) === (flags.anyWorkflow === undefined)) {
        throw new CliError('give --workflow <name> or --any-workflow (one of them)');
      }
      if (flags.responseTimeout !== undefined && !flags.sync) throw new CliError('--response-timeout needs --sync');
      const responseTimeoutMs =
        flags.responseTimeout === undefined
          ? undefined
          : parseDuration(flags.responseTimeout, '--response-timeout', RESPONSE_TIMEOUT_BOUNDS);
      const target = triggerTarget(flags);
      const caller = sessionCaller(loadSettings(command.optsWithGlobals(), rt), rt);
      const created = await caller.api.post<Trigger>(`/orgs/${await caller.orgId()}/triggers`, {
        name: flags.name,
        ...(target.agent === undefined ? target.selector : { agentId: await agentId(caller, target.agent) }),
        scopeType: flags.anyWorkflow ? 'agent' : 'workflow',
        ...(flags.workflow === undefined ? {} : { workflowName: flags.workflow }),
        responseMode: flags.sync ? 'sync' : 'async',
        ...(responseTimeoutMs === undefined ? {} : { responseTimeoutMs }),
        ...(flags.allowedRef === undefined ? {} : { allowedRefs: flags.allowedRef }),
        ...(flags.allowDebug ? { allowDebug: true } : {}),
      } satisfies RequestBody<'createTrigger'>);
      if (flags.json) return printJson(rt, created);
      rt.out(`${created.id}\n`);
      const on = created.agentSelector === null ? '' : ` on ${await describeSelection(caller, created)}`;
      rt.err(
        `Created the ${created.responseMode} trigger ${created.name}${on}; run it with: drover run ${created.id}\n`,
      );
    });

  group
    .command('list')
    .description('the triggers, oldest first, a page at a time')
    .option('--type <type>', `only the triggers of this type (${TRIGGER_TYPES.join(', ')})`)
    .option('--name <text>', 'only the triggers whose name holds this text, in any case')
    .option('--limit <n>', `how many a page (1 to ${PAGE.max})`, String(PAGE.default))
    .option('--cursor <cursor>', 'the page after the one that ended with this cursor (printed when more follow)')
    .option('--all', 'every page, not just the first (with --json: one trigger a line)')
    .option('--json', "print the API's answer as JSON (with --all: one trigger a line)")
    .action(async (flags: ListFlags, command: Command) => {
      const type = checkType(flags.type);
      if (flags.name !== undefined && (flags.name === '' || characterCount(flags.name) > MAX_TRIGGER_NAME_LENGTH)) {
        throw new CliError(`--name: expected 1 to ${MAX_TRIGGER_NAME_LENGTH} characters of a trigger's name`);
      }
      const limit = integerFlag('--limit', flags.limit, 1, PAGE.max);
      if (flags.cursor === '') throw new CliError('--cursor: expected the cursor a previous page printed, got nothing');
      const caller = sessionCaller(loadSettings(command.optsWithGlobals(), rt), rt);
      const path = `/orgs/${await caller.orgId()}/triggers`;
      const page = (cursor: string | undefined) =>
        caller.api.call<Trigger[]>('GET', path, { query: { type, q: flags.name, limit, cursor } });
      const none = type || flags.name ? 'No triggers match.\n' : 'No triggers.\n';

      if (!flags.all) {
        const answer = await page(flags.cursor);
        const total = totalOf(answer.headers, answer.body.length);
        if (flags.json) printJson(rt, answer.body);
        else
          rt.out(
            answer.body.length > 0
              ? await triggerTable(caller, answer.body)
              : total > 0
                ? 'No more triggers after that cursor.\n'
                : none,
          );
        if (total > 0) rt.err(`${countLine(answer.body.length, total, 'trigger', 'triggers')}\n`);
        sayNextPage(rt, answer.headers, 'triggers', 'drover trigger list', {
          type,
          name: flags.name,
          limit: limit === PAGE.default ? undefined : limit,
        });
        return;
      }
      const all: Trigger[] = [];
      await readEveryPage(page, flags.cursor, (triggers) => {
        if (flags.json) for (const trigger of triggers) rt.out(jsonLine(trigger));
        else all.push(...triggers);
      });
      if (flags.json) return;
      rt.out(all.length === 0 ? none : await triggerTable(caller, all));
      if (all.length > 0) rt.err(`${countLine(all.length, all.length, 'trigger', 'triggers')}\n`);
    });

  group
    .command('show')
    .description("one trigger: where and what it runs, how it answers, and a cron trigger's next and last runs")
    .argument('<trigger>', 'the trigger, by id or name')
    .option('--json', "print the API's answer (the trigger) as JSON")
    .action(async (value: string, flags: { json?: boolean }, command: Command) => {
      const caller = sessionCaller(loadSettings(command.optsWithGlobals(), rt), rt);
      const trigger = await findTrigger(caller, value);
      if (flags.json) return printJson(rt, trigger);
      const agentName =
        trigger.agentId === null ? undefined : (await agentNamerFor(caller, [trigger.agentId]))(trigger.agentId);
      rt.out(formatTrigger(trigger, agentName));
      if (trigger.agentSelector !== null) rt.out(await reachedNow(caller, trigger));
    });

  configureTriggerUpdateCommand(group, rt);

  for (const [name, enabled] of [
    ['pause', false],
    ['resume', true],
  ] as const) {
    group
      .command(name)
      .description(
        enabled
          ? 'resume a paused cron trigger; the runs it missed meanwhile follow its missed-run policy (not viewers)'
          : 'pause a cron trigger: it fires no more until resumed; jobs already made run on (not viewers)',
      )
      .argument('<trigger>', 'the cron trigger, by id or name')
      .option('--json', "print the API's answer (the trigger) as JSON")
      .action(async (value: string, flags: { json?: boolean }, command: Command) => {
        const caller = sessionCaller(loadSettings(command.optsWithGlobals(), rt), rt);
        const trigger = await findTrigger(caller, value);
        if (trigger.type !== 'cron') {
          throw new CliError(`the trigger ${trigger.name} is a ${trigger.type} trigger: only a cron trigger ${name}s`);
        }
        const changed =
          trigger.cronEnabled === enabled
            ? trigger
            : await caller.api.patch<Trigger>(`/orgs/${await caller.orgId()}/triggers/${trigger.id}`, {
                cronEnabled: enabled,
              } satisfies RequestBody<'updateTrigger'>);
        if (flags.json) return printJson(rt, changed);
        const next = changed.nextRunAt === null ? '' : `; next run ${shortTime(changed.nextRunAt)}`;
        rt.out(
          trigger.cronEnabled === enabled
            ? `The trigger ${changed.name} was ${enabled ? 'running' : 'paused'} already${next}\n`
            : `${enabled ? 'Resumed' : 'Paused'} the trigger ${changed.name} (${changed.id})${next}\n`,
        );
      });
  }

  group
    .command('delete')
    .description('delete a trigger (owners and operators); tokens that name it can no longer run it')
    .argument('<trigger-id>', 'the trigger')
    .option('--json', "print the API's answer (the trigger as it was) as JSON")
    .action(async (id: string, flags: { json?: boolean }, command: Command) => {
      const caller = sessionCaller(loadSettings(command.optsWithGlobals(), rt), rt);
      const deleted = await caller.api.delete<Trigger>(
        `/orgs/${await caller.orgId()}/triggers/${encodeURIComponent(id)}`,
      );
      if (flags.json) return printJson(rt, deleted);
      rt.out(`Deleted the trigger ${deleted.name} (${deleted.id})\n`);
    });
}

/** The triggers as a table, each agent by name. */
async function triggerTable(caller: SessionCaller, triggers: Trigger[]): Promise<string> {
  const agentName = await agentNamerFor(
    caller,
    triggers.flatMap((t) => (t.agentId === null ? [] : [t.agentId])),
  );
  const rows = triggers.map((t) => [
    t.id,
    t.name,
    t.type,
    t.responseMode,
    t.scopeType === 'agent' ? '(any)' : t.workflowName,
    t.agentId === null ? selectionCell(t) : agentName(t.agentId),
  ]);
  return formatTable(['ID', 'NAME', 'TYPE', 'MODE', 'WORKFLOW', 'AGENT'], rows);
}

function checkType(type: string | undefined): TriggerType | undefined {
  if (type === undefined || (TRIGGER_TYPES as readonly string[]).includes(type)) return type as TriggerType;
  const near = nearestName(type, TRIGGER_TYPES);
  throw new CliError(
    `--type: expected one of ${TRIGGER_TYPES.join(', ')}, got \`${type}\`${near ? ` (did you mean ${near}?)` : ''}`,
  );
}

/** A trigger as `label: value` lines, then a cron trigger's next runs and last occurrences. */
function formatTrigger(t: Trigger, agentName: string | undefined): string {
  const where = t.agentId === null ? `the agents ${selectionCell(t)}` : `${agentName ?? t.agentId}`;
  const fields: (readonly [string, string | null | undefined])[] = [
    ['ID', t.id],
    ['Name', t.name],
    ['Type', t.type],
    ['Runs on', where],
    ['Workflow', t.scopeType === 'agent' ? '(any, named by each run)' : t.workflowName],
  ];
  const refs = [
    'Refs',
    t.allowedRefs === null || t.allowedRefs.length === 0 ? 'any' : t.allowedRefs.join(', '),
  ] as const;
  if (t.type === 'webhook') {
    fields.push(
      [
        'Answers',
        t.responseMode === 'sync' ? `when the job ends (at most ${t.responseTimeoutMs / 1000} s)` : 'at once (async)',
      ],
      refs,
      ['Debug runs', t.allowDebug ? 'allowed' : 'refused'],
    );
  } else if (t.type === 'cron') {
    // A schedule's runs take the trigger's own ref and params.
    fields.push(['Ref', t.ref], ['Params', t.params === null ? null : JSON.stringify(t.params)]);
  } else {
    fields.push(['Keyword', t.chatKeyword], ['Channel', t.chatChannelId], refs);
  }
  fields.push([
    'Notifies',
    t.notifyProvider === null ? 'nobody' : `${t.notifyProvider} channel ${t.notifyChannelId} on ${t.notifyOn}`,
  ]);
  if (t.type === 'cron') {
    fields.push(
      ['Schedule', `${t.cronExpression} (${t.cronTimezone})${t.cronEnabled ? '' : ', paused'}`],
      ['Missed runs', t.cronMissedPolicy],
      ['Overlap', t.cronOverlapPolicy],
    );
  }
  fields.push(['Created', t.createdAt], ['Changed', t.updatedAt]);
  let text = formatFields(fields);
  if (t.type === 'cron' && t.nextRuns.length > 0) {
    text += `\nNext runs:\n${formatTable(
      ['UTC', 'LOCAL'],
      t.nextRuns.map((r) => [shortTime(r.at), r.localTime]),
    )}`;
  }
  if (t.type === 'cron' && t.lastOccurrences.length > 0) {
    text += `\nLast runs:\n${formatTable(
      ['SCHEDULED', 'OUTCOME', 'JOB', 'STATUS'],
      t.lastOccurrences.map((o) => [
        shortTime(o.scheduledAt),
        o.outcome === 'skipped' ? `skipped: ${o.reason}` : 'job',
        o.jobId ?? o.batchId,
        o.jobStatus,
      ]),
    )}`;
  }
  return text;
}

/** Where a new trigger runs: one agent (`--agent`), or the agents of a selector checked here first. */
function triggerTarget(
  flags: CreateFlags,
):
  | { agent: string; selector?: never }
  | { agent?: never; selector: Pick<RequestBody<'createTrigger'>, 'agentSelector' | 'fanout' | 'maxParallel'> } {
  if ((flags.agent === undefined) === (flags.selector === undefined)) {
    throw new CliError('give --agent <id-or-name> or --selector <selector> (one of them)');
  }
  if (flags.selector === undefined) {
    const extra = flags.fanout !== undefined ? '--fanout' : flags.maxParallel !== undefined ? '--max-parallel' : null;
    if (extra !== null) throw new CliError(`${extra} needs --selector`);
    return { agent: flags.agent! };
  }
  // Checked here first, by the coordinator's rules: a caret under the position of a mistake, and
  // the empty selector in the coordinator's words (its schema would only say it is too short).
  if (parseSelectorOption(flags.selector).length === 0) {
    throw new CliError(
      'body.agentSelector: must select by at least one label (to reach every agent, select one they all have, such as `os`)',
    );
  }
  const fanout = flags.fanout ?? 'all';
  if (fanout !== 'all' && fanout !== 'one') throw new CliError(`--fanout: expected all or one, got \`${fanout}\``);
  let maxParallel: number | undefined;
  if (flags.maxParallel !== undefined) {
    if (fanout === 'one') throw new CliError('--max-parallel needs --fanout all (a pool runs one job per run)');
    maxParallel = integerFlag('--max-parallel', flags.maxParallel, 1);
  }
  return { selector: { agentSelector: flags.selector, fanout, ...(maxParallel === undefined ? {} : { maxParallel }) } };
}

/** A selector trigger's AGENT cell: `role=gateway (all)`, `role=gateway (all, 5 at a time)`. */
function selectionCell(t: Trigger): string {
  const parallel = t.maxParallel === null ? '' : `, ${t.maxParallel} at a time`;
  return `${t.agentSelector} (${t.fanout ?? '-'}${parallel})`;
}

/**
 * What a new selector trigger runs on, for the line that confirms it: the selector, the fanout
 * (a batch of one job per agent, or a pool's one job on one of them) and how many agents it
 * selects now (left out when they cannot be listed).
 */
async function describeSelection(caller: SessionCaller, t: Trigger): Promise<string> {
  let now = '';
  try {
    const count = (await readSelectorMatches(caller, t.agentSelector!, undefined)).matching;
    now = `; ${count} agent${count === 1 ? '' : 's'} now`;
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
  }
  if (t.fanout === 'one')
    return `the agents ${t.agentSelector} selects (a pool: one job per run, on one of them with room${now})`;
  const parallel = t.maxParallel === null ? '' : `, ${t.maxParallel} at a time`;
  return `the agents ${t.agentSelector} selects (a batch: one job each${parallel}${now})`;
}

/**
 * What a run of a selector trigger would reach now (`GET .../selector-matches`): the agents, those
 * of them lacking its workflow and its versions; nothing when the coordinator cannot say.
 */
async function reachedNow(caller: SessionCaller, t: Trigger): Promise<string> {
  const workflow = t.scopeType === 'workflow' && t.workflowName !== null ? t.workflowName : undefined;
  try {
    const matches = await readSelectorMatches(caller, t.agentSelector!, workflow);
    return `\nA run now:\n${formatFields(matchFields(matches, workflow)).replace(/^/gm, '  ')}`;
  } catch (error) {
    if (error instanceof ApiError) return '';
    throw error;
  }
}

import type { RequestBody, Schema } from '@drover/shared/api';
import type { Command } from 'commander';
import { sessionCaller } from '../callers.js';
import { parseDuration } from '../duration.js';
import { ApiError, CliError } from '../errors.js';
import { integerFlag } from '../integer-flag.js';
import { oneSelector, parseSelectorOption } from '../labels/selector.js';
import { printJson } from '../output/json.js';
import { collect } from '../params.js';
import type { Runtime } from '../runtime.js';
import { agentId, findTrigger } from '../session/lookups.js';
import { loadSettings } from '../settings.js';

type Trigger = Schema<'Trigger'>;
type TriggerChange = RequestBody<'updateTrigger'>;

/** The coordinator's bounds of a sync trigger's `responseTimeoutMs`: 1 s to 10 minutes. */
export const RESPONSE_TIMEOUT_BOUNDS = { minMs: 1_000, maxMs: 600_000 };

/** The flags `drover trigger create` and `drover trigger update` share. */
export interface TriggerFlags {
  agent?: string;
  selector?: string;
  fanout?: string;
  maxParallel?: string;
  workflow?: string;
  anyWorkflow?: boolean;
  sync?: boolean;
  responseTimeout?: string;
  allowedRef?: string[];
  allowDebug?: boolean;
  json?: boolean;
}

interface UpdateFlags extends TriggerFlags {
  name?: string;
  async?: boolean;
  anyRef?: boolean;
  refuseDebug?: boolean;
}

/** Pairs of flags of which at most one may be given. */
const EITHER: readonly (readonly [keyof UpdateFlags, string, keyof UpdateFlags, string])[] = [
  ['agent', '--agent', 'selector', '--selector'],
  ['workflow', '--workflow', 'anyWorkflow', '--any-workflow'],
  ['sync', '--sync', 'async', '--async'],
  ['allowedRef', '--allowed-ref', 'anyRef', '--any-ref'],
  ['allowDebug', '--allow-debug', 'refuseDebug', '--refuse-debug'],
];

/**
 * `drover trigger update <trigger>`: changes the fields its flags name and keeps the others (a
 * `PATCH`, which the coordinator applies to the trigger as it is when the change arrives), for
 * scripts that rename a trigger, move it to another agent or selector, or change the refs it takes.
 */
export function configureTriggerUpdateCommand(group: Command, rt: Runtime): void {
  group
    .command('update')
    .description('change a trigger: what its flags name, the rest kept as it is (not viewers)')
    .argument('<trigger>', 'the trigger, by id or name')
    .option('--name <name>', 'its new name')
    .option('--agent <id-or-name>', 'run on this agent (instead of its agent or selector)')
    .option(
      '--selector <selector>',
      "run on the agents a label selector picks, e.g. 'role=gateway,site=berlin' (docs/fleets.md)",
      oneSelector,
    )
    .option('--fanout <fanout>', 'on a selector: all, a batch of one job per agent; or one, a pool')
    .option('--max-parallel <n>', "on a selector with --fanout all: at most n of a batch's jobs at a time, or `all`")
    .option('--workflow <name>', 'the one workflow it runs')
    .option('--any-workflow', 'any workflow of the agent, named by each run (drover run --workflow)')
    .option('--sync', 'answer a run once its job ended')
    .option('--async', 'answer a run at once')
    .option('--response-timeout <duration>', "a sync trigger's longest wait, 1s to 10m")
    .option('--allowed-ref <ref>', 'a ref runs must give (repeatable; replaces the list)', collect)
    .option('--any-ref', 'runs may give any ref')
    .option('--allow-debug', 'let runs ask for debug mode')
    .option('--refuse-debug', 'refuse runs that ask for debug mode')
    .option('--json', "print the API's answer (the trigger) as JSON")
    .action(async (value: string, flags: UpdateFlags, command: Command) => {
      for (const [a, aFlag, b, bFlag] of EITHER) {
        if (flags[a] !== undefined && flags[b] !== undefined) throw new CliError(`give ${aFlag} or ${bFlag}, not both`);
      }
      const change = changeOf(flags);
      const caller = sessionCaller(loadSettings(command.optsWithGlobals(), rt), rt);
      if (flags.agent !== undefined) change.agentId = await agentId(caller, flags.agent);
      let trigger = await findTrigger(caller, value);
      const path = `/orgs/${await caller.orgId()}/triggers/${trigger.id}`;
      let changed: Trigger | undefined;
      let sent: TriggerChange = change;
      for (let attempt = 1; changed === undefined; attempt++) {
        // Onto a selector from an agent, a batch unless --fanout says otherwise, as `trigger create
        // --selector` makes it; decided from the trigger as read, so sent only onto that version
        // (If-Match): moved meanwhile, it is read again and decided again.
        const inferred = flags.selector !== undefined && flags.fanout === undefined && trigger.agentSelector === null;
        const body: TriggerChange = inferred ? { ...change, fanout: 'all' } : change;
        const headers: Record<string, string> = inferred ? { 'if-match': `"${trigger.updatedAt}"` } : {};
        try {
          changed = (await caller.api.call<Trigger>('PATCH', path, { body, headers })).body;
          sent = body;
        } catch (error) {
          if (!(error instanceof ApiError && error.status === 412) || attempt === 3) throw error;
          trigger = await caller.api.get<Trigger>(path);
        }
      }
      if (flags.json) return printJson(rt, changed);
      rt.out(`Changed the trigger ${changed.name} (${changed.id}): ${Object.keys(sent).join(', ')}\n`);
    });
}

/** The PATCH body of the flags given (the agent's id is looked up after); an error when none changes anything. */
function changeOf(flags: UpdateFlags): TriggerChange {
  const change: TriggerChange = {};
  if (flags.name !== undefined) change.name = flags.name;
  if (flags.selector !== undefined) {
    // Checked here first, by the coordinator's rules: a caret under the position of a mistake.
    if (parseSelectorOption(flags.selector).length === 0) {
      throw new CliError(
        '--selector: must select by at least one label (to reach every agent, select one they all have, such as `os`)',
      );
    }
    change.agentSelector = flags.selector;
  }
  if (flags.fanout !== undefined) {
    if (flags.fanout !== 'all' && flags.fanout !== 'one') {
      throw new CliError(`--fanout: expected all or one, got \`${flags.fanout}\``);
    }
    change.fanout = flags.fanout;
  }
  if (flags.maxParallel !== undefined) {
    change.maxParallel = flags.maxParallel === 'all' ? null : integerFlag('--max-parallel', flags.maxParallel, 1);
  }
  if (flags.workflow !== undefined) Object.assign(change, { scopeType: 'workflow', workflowName: flags.workflow });
  if (flags.anyWorkflow) Object.assign(change, { scopeType: 'agent', workflowName: null });
  if (flags.sync) change.responseMode = 'sync';
  if (flags.async) change.responseMode = 'async';
  if (flags.responseTimeout !== undefined) {
    change.responseTimeoutMs = parseDuration(flags.responseTimeout, '--response-timeout', RESPONSE_TIMEOUT_BOUNDS);
  }
  if (flags.allowedRef !== undefined) change.allowedRefs = flags.allowedRef;
  if (flags.anyRef) change.allowedRefs = null;
  if (flags.allowDebug) change.allowDebug = true;
  if (flags.refuseDebug) change.allowDebug = false;
  if (Object.keys(change).length === 0 && flags.agent === undefined) {
    throw new CliError('nothing to change: give at least one flag (drover trigger update --help lists them)');
  }
  return change;
}

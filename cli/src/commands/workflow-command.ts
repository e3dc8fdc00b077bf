import type { RequestBody, Schema } from '@drover/shared/api';
import type { Command } from 'commander';
import { sessionCaller } from '../callers.js';
import { CliError } from '../errors.js';
import { printJson } from '../output/json.js';
import { formatTable } from '../output/table.js';
import type { Runtime } from '../runtime.js';
import { agentId, findAgent, isUuid } from '../session/lookups.js';
import { shellWord } from '../output/next-page.js';
import { loadSettings } from '../settings.js';

type Workflow = Schema<'Workflow'>;
type LimitsChange = RequestBody<'updateWorkflowLimits'>;

/** The coordinator's largest limit (`PATCH /orgs/:orgId/workflows/:workflowId`). */
const MAX_LIMIT = 1_000_000_000;

/** Each limit: its option, its field, and the window it counts in. */
const LIMITS = [
  { option: 'perMinute', flag: '--per-minute', field: 'rateLimitPerMinute', window: 'minute' },
  { option: 'perHour', flag: '--per-hour', field: 'rateLimitPerHour', window: 'hour' },
  { option: 'perDay', flag: '--per-day', field: 'rateLimitPerDay', window: 'day' },
] as const;

type LimitFlags = Partial<Record<(typeof LIMITS)[number]['option'], string>> & { json?: boolean };

/** `drover workflow limits`: one workflow of one agent (a session). */
export function configureWorkflowCommand(program: Command, rt: Runtime): void {
  const group = program.command('workflow').description('one workflow of an agent (a session)');

  group
    .command('limits')
    .description(
      "show a workflow's rate limits (runs of it on that agent, every trigger and token together), " +
        'or with a value option change them (owners)',
    )
    .argument('<agent>', 'the agent, by id or name')
    .argument('<workflow>', 'the workflow, by name')
    .option('--per-minute <n>', 'runs a minute, or none')
    .option('--per-hour <n>', 'runs an hour, or none')
    .option('--per-day <n>', 'runs a day, or none')
    .option('--json', "print the API's answer (the workflow) as JSON")
    .addHelpText('after', '\nExample: drover workflow limits build-02 deploy --per-hour 20 --per-minute none\n')
    .action(async (agent: string, name: string, flags: LimitFlags, command: Command) => {
      const change = limitsChange(flags);
      const caller = sessionCaller(loadSettings(command.optsWithGlobals(), rt), rt);
      const orgPath = `/orgs/${await caller.orgId()}`;
      const id = await agentId(caller, agent);
      const workflows = await caller.api.get<Workflow[]>(`${orgPath}/workflows`, { agentId: id });
      let workflow = workflows.find((w) => w.name === name);
      if (!workflow) {
        if (isUuid(agent)) await findAgent(caller, agent); // an id of no agent: the API's 404
        throw new CliError(
          `${agent} reports no workflow \`${name}\` (drover workflows --agent ${shellWord(agent)} lists them)`,
        );
      }
      if (change) workflow = await caller.api.patch<Workflow>(`${orgPath}/workflows/${workflow.id}`, change);
      if (flags.json) return printJson(rt, workflow);
      if (change) rt.out(`Changed the limits of ${workflow.name} on ${agent}.\n`);
      rt.out(
        formatTable(
          ['WINDOW', 'LIMIT'],
          LIMITS.map((l) => [l.window, workflow[l.field] === null ? 'none' : `${workflow[l.field]} runs`]),
        ),
      );
    });
}

/** The change the value options ask for (`none`: null, no limit), or null when none is given. */
function limitsChange(flags: LimitFlags): LimitsChange | null {
  const change: LimitsChange = {};
  for (const { option, flag, field } of LIMITS) {
    const value = flags[option];
    if (value === undefined) continue;
    if (value === 'none') {
      change[field] = null;
      continue;
    }
    const n = Number(value);
    if (!/^\d+$/.test(value) || !Number.isSafeInteger(n) || n < 1 || n > MAX_LIMIT) {
      throw new CliError(`${flag}: expected a whole number from 1 to ${MAX_LIMIT}, or none, got \`${value}\``);
    }
    change[field] = n;
  }
  return Object.keys(change).length === 0 ? null : change;
}

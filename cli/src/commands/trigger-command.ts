import type { RequestBody, Schema } from '@drover/shared/api';
import type { Command } from 'commander';
import { sessionCaller } from '../callers.js';
import { parseDuration } from '../duration.js';
import { CliError } from '../errors.js';
import { printJson } from '../output/json.js';
import { formatTable } from '../output/table.js';
import { collect } from '../params.js';
import type { Runtime } from '../runtime.js';
import { agentId } from '../session/lookups.js';
import { agentNamer } from '../agent-names.js';
import { loadSettings } from '../settings.js';

type Trigger = Schema<'Trigger'>;

interface CreateFlags {
  name: string;
  agent: string;
  workflow?: string;
  anyWorkflow?: boolean;
  sync?: boolean;
  responseTimeout?: string;
  allowedRef: string[];
  allowDebug?: boolean;
  json?: boolean;
}

/** `drover trigger create|list|delete`: webhook triggers (cron and chat ones are made in the dashboard). */
export function configureTriggerCommand(program: Command, rt: Runtime): void {
  const group = program.command('trigger').description("the organization's triggers (a session)");

  group
    .command('create')
    .description('create a webhook trigger (run with `drover run <id>`); prints its id')
    .requiredOption('--name <name>', 'its name')
    .requiredOption('--agent <id-or-name>', 'the agent it runs on')
    .option('--workflow <name>', 'the one workflow it runs')
    .option('--any-workflow', 'any workflow of the agent, named by each run (drover run --workflow)')
    .option('--sync', 'answer a run once its job ended (default: at once, async)')
    .option('--response-timeout <duration>', 'with --sync: the longest wait, 1s to 10m (default 30s)')
    .option('--allowed-ref <ref>', 'a ref runs must give (repeatable; default: any)', collect, [])
    .option('--allow-debug', 'let runs ask for debug mode')
    .option('--json', "print the API's answer as JSON")
    .action(async (flags: CreateFlags, command: Command) => {
      if ((flags.workflow === undefined) === (flags.anyWorkflow === undefined)) {
        throw new CliError('give --workflow <name> or --any-workflow (one of them)');
      }
      if (flags.responseTimeout !== undefined && !flags.sync) throw new CliError('--response-timeout needs --sync');
      const responseTimeoutMs =
        flags.responseTimeout === undefined ? undefined : parseDuration(flags.responseTimeout, '--response-timeout');
      const caller = sessionCaller(loadSettings(command.optsWithGlobals(), rt), rt);
      const created = await caller.api.post<Trigger>(`/orgs/${await caller.orgId()}/triggers`, {
        name: flags.name,
        agentId: await agentId(caller, flags.agent),
        scopeType: flags.anyWorkflow ? 'agent' : 'workflow',
        ...(flags.workflow === undefined ? {} : { workflowName: flags.workflow }),
        responseMode: flags.sync ? 'sync' : 'async',
        ...(responseTimeoutMs === undefined ? {} : { responseTimeoutMs }),
        ...(flags.allowedRef.length === 0 ? {} : { allowedRefs: flags.allowedRef }),
        ...(flags.allowDebug ? { allowDebug: true } : {}),
      } satisfies RequestBody<'createTrigger'>);
      if (flags.json) return printJson(rt, created);
      rt.out(`${created.id}\n`);
      rt.err(`Created the ${created.responseMode} trigger ${created.name}; run it with: drover run ${created.id}\n`);
    });

  group
    .command('list')
    .description('the triggers, oldest first')
    .option('--json', "print the API's answer as JSON")
    .action(async (flags: { json?: boolean }, command: Command) => {
      const caller = sessionCaller(loadSettings(command.optsWithGlobals(), rt), rt);
      const triggers = await caller.api.get<Trigger[]>(`/orgs/${await caller.orgId()}/triggers`);
      if (flags.json) return printJson(rt, triggers);
      if (triggers.length === 0) return rt.out('No triggers.\n');
      const agentName = await agentNamer(caller);
      const rows = triggers.map((t) => [
        t.id,
        t.name,
        t.type,
        t.responseMode,
        t.scopeType === 'agent' ? '(any)' : t.workflowName,
        t.agentId === null ? `${t.agentSelector} (${t.fanout})` : agentName(t.agentId),
      ]);
      rt.out(formatTable(['ID', 'NAME', 'TYPE', 'MODE', 'WORKFLOW', 'AGENT'], rows));
    });

  group
    .command('delete')
    .description('delete a trigger (owners only); tokens that name it can no longer run it')
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

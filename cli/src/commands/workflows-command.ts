import type { Schema } from '@drover/shared/api';
import type { Command } from 'commander';
import { agentNamer } from '../agent-names.js';
import { anyCaller } from '../callers.js';
import { printJson } from '../output/json.js';
import { formatTable } from '../output/table.js';
import type { Runtime } from '../runtime.js';
import { loadSettings } from '../settings.js';

/** A workflow as `GET /v1/workflows` (an API token) answers it; the organization's list has these fields too. */
type Workflow = Schema<'PublicWorkflow'>;
type ParamSpec = Schema<'WorkflowParam'>;

export function configureWorkflowsCommand(program: Command, rt: Runtime): void {
  program
    .command('workflows')
    .description("the workflows the API token may run (GET /v1/workflows), or with a session the organization's")
    .option('--json', "print the API's answer as JSON")
    .action(async (flags: { json?: boolean }, command: Command) => {
      const caller = anyCaller(loadSettings(command.optsWithGlobals(), rt), rt);
      const path = caller.kind === 'token' ? '/workflows' : `/orgs/${await caller.orgId()}/workflows`;
      const workflows = await caller.api.get<Workflow[]>(path);
      if (flags.json) return printJson(rt, workflows);
      if (workflows.length === 0) return rt.out('No workflows.\n');
      const agentName = await agentNamer(caller);
      const rows = workflows.map((w) => [
        w.name,
        w.version,
        params(w.paramsSchema),
        agentName(w.agentId),
        w.description,
      ]);
      rt.out(formatTable(['NAME', 'VERSION', 'PARAMS', 'AGENT', 'DESCRIPTION'], rows));
    });
}

/** `who:string env*:enum`: each param with its type, `*` when it is required. */
function params(schema: ParamSpec[] | null): string {
  if (!schema || schema.length === 0) return '-';
  return schema.map((p) => `${p.name}${p.required ? '*' : ''}:${p.type}`).join(' ');
}

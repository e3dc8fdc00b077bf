import type { Schema } from '@drover/shared/api';
import type { Command } from 'commander';
import { agentNamerFor, type Agent } from '../agent-names.js';
import { anyCaller } from '../callers.js';
import { printJson } from '../output/json.js';
import { formatTable } from '../output/table.js';
import type { Runtime } from '../runtime.js';
import { agentId, findAgent, isUuid, pick } from '../session/lookups.js';
import { loadSettings } from '../settings.js';

/** A workflow as `GET /v1/workflows` (an API token) answers it; the organization's list has these fields too. */
type Workflow = Schema<'PublicWorkflow'>;
type ParamSpec = Schema<'WorkflowParam'>;

export function configureWorkflowsCommand(program: Command, rt: Runtime): void {
  program
    .command('workflows')
    .description("the workflows the API token may run (GET /v1/workflows), or with a session the organization's")
    .option('--agent <agent>', "only this agent's workflows (its name or id)")
    .option('--json', "print the API's answer as JSON")
    .action(async (flags: { agent?: string; json?: boolean }, command: Command) => {
      const caller = anyCaller(loadSettings(command.optsWithGlobals(), rt), rt);
      let workflows: Workflow[];
      if (caller.kind === 'token') {
        workflows = await caller.api.get<Workflow[]>('/workflows');
        if (flags.agent !== undefined) {
          // The token's own list, which takes no filter: the agent among those it reaches.
          const agents = await caller.api.get<Agent[]>('/agents');
          const { id } = pick(agents, flags.agent, 'agent', (a) => a.name);
          workflows = workflows.filter((w) => w.agentId === id);
        }
      } else {
        const agent = flags.agent === undefined ? undefined : await agentId(caller, flags.agent);
        workflows = await caller.api.get<Workflow[]>(`/orgs/${await caller.orgId()}/workflows`, { agentId: agent });
        // An id of no agent (a typo) lists nothing: the API's 404 says so, not "no workflows".
        if (workflows.length === 0 && agent !== undefined && isUuid(flags.agent!)) await findAgent(caller, agent);
      }
      if (flags.json) return printJson(rt, workflows);
      if (workflows.length === 0)
        return rt.out(flags.agent === undefined ? 'No workflows.\n' : 'No workflows of this agent.\n');
      const agentName = await agentNamerFor(
        caller,
        workflows.map((w) => w.agentId),
      );
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

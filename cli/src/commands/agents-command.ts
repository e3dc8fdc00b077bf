import type { Command } from 'commander';
import { listAgents } from '../agent-names.js';
import { anyCaller } from '../callers.js';
import { printJson } from '../output/json.js';
import { formatTable } from '../output/table.js';
import { ago } from '../output/time.js';
import type { Runtime } from '../runtime.js';
import { loadSettings } from '../settings.js';

export function configureAgentsCommand(program: Command, rt: Runtime): void {
  program
    .command('agents')
    .description("the agents the API token reaches (GET /v1/agents), or with a session the organization's")
    .option('--json', "print the API's answer as JSON")
    .action(async (flags: { json?: boolean }, command: Command) => {
      const agents = await listAgents(anyCaller(loadSettings(command.optsWithGlobals(), rt), rt));
      if (flags.json) return printJson(rt, agents);
      if (agents.length === 0) return rt.out('No agents.\n');
      const rows = agents.map((a) => [a.id, a.name, a.status, ago(a.lastSeenAt), a.hostname, a.os, a.agentVersion]);
      rt.out(formatTable(['ID', 'NAME', 'STATUS', 'LAST SEEN', 'HOSTNAME', 'OS', 'VERSION'], rows));
    });
}

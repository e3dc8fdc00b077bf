import type { Command } from 'commander';
import { listAgents, SELECTOR_NEEDS_SESSION } from '../agent-names.js';
import { anyCaller } from '../callers.js';
import { CliError } from '../errors.js';
import { oneSelector } from '../labels/selector.js';
import { labelsCell } from '../labels/show-labels.js';
import { printJson } from '../output/json.js';
import { formatTable } from '../output/table.js';
import { ago } from '../output/time.js';
import type { Runtime } from '../runtime.js';
import { loadSettings } from '../settings.js';

export function configureAgentsCommand(program: Command, rt: Runtime): void {
  program
    .command('agents')
    .description("the agents the API token reaches (GET /v1/agents), or with a session the organization's")
    .option(
      '--selector <selector>',
      "with a session: only the agents whose labels it matches, e.g. 'site in (berlin,munich),role=gateway' (docs/fleets.md)",
      oneSelector,
    )
    .option('--json', "print the API's answer as JSON")
    .action(async (flags: { selector?: string; json?: boolean }, command: Command) => {
      const settings = loadSettings(command.optsWithGlobals(), rt);
      // Refused before any call: an API token's agents come without their labels.
      if (flags.selector !== undefined && settings.token !== null) throw new CliError(SELECTOR_NEEDS_SESSION);
      const caller = anyCaller(settings, rt);
      const agents = await listAgents(caller, flags.selector);
      if (flags.json) return printJson(rt, agents);
      if (agents.length === 0) return rt.out(flags.selector === undefined ? 'No agents.\n' : 'No agent matches.\n');
      const rows = agents.map((a) => [
        a.id,
        a.name,
        a.status,
        ago(a.lastSeenAt),
        a.hostname,
        a.os,
        a.agentVersion,
        labelsCell(a.labels ?? {}), // none from a coordinator older than labels
      ]);
      rt.out(formatTable(['ID', 'NAME', 'STATUS', 'LAST SEEN', 'HOSTNAME', 'OS', 'VERSION', 'LABELS'], rows));
    });
}

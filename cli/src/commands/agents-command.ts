import type { Command } from 'commander';
import type { IncomingHttpHeaders } from 'node:http';
import { AGENT_STATUSES } from '@drover/shared';
import { listAgents, SELECTOR_NEEDS_SESSION, type Agent } from '../agent-names.js';
import { anyCaller } from '../callers.js';
import { configureAgentsLabelCommand } from './agents-label-command.js';
import { configureAgentsMatchCommand } from './agents-match-command.js';
import { CliError } from '../errors.js';
import { integerFlag } from '../integer-flag.js';
import { oneSelector, selectorRefusal } from '../labels/selector.js';
import { sayNextPage } from '../output/next-page.js';
import { labelsCell } from '../labels/show-labels.js';
import { printJson } from '../output/json.js';
import { formatTable } from '../output/table.js';
import { ago } from '../output/time.js';
import type { Runtime } from '../runtime.js';
import { loadSettings } from '../settings.js';

interface AgentsFlags {
  selector?: string;
  status?: string;
  name?: string;
  limit?: string;
  cursor?: string;
  json?: boolean;
}

/** The flags that narrow the organization's list, which an API token's discovery does not take. */
const SESSION_FLAGS = ['status', 'name', 'limit', 'cursor'] as const;

export function configureAgentsCommand(program: Command, rt: Runtime): void {
  const agents = program
    .command('agents')
    .description("the agents the API token reaches (GET /v1/agents), or with a session the organization's")
    .option(
      '--selector <selector>',
      "with a session: only the agents whose labels it matches, e.g. 'site in (berlin,munich),role=gateway' (docs/fleets.md)",
      oneSelector,
    )
    .option('--status <status>', `with a session: only the agents in this status (${AGENT_STATUSES.join(', ')})`)
    .option('--name <text>', 'with a session: only the agents whose name or hostname holds this text, in any case')
    .option(
      '--limit <n>',
      'with a session: at most this many agents (1 to 500), the command for the next page on standard error',
    )
    .option('--cursor <cursor>', 'the page after the one that ended with this cursor (printed when more follow)')
    .option('--json', "print the API's answer as JSON")
    .action(async (flags: AgentsFlags, command: Command) => {
      const settings = loadSettings(command.optsWithGlobals(), rt);
      // Refused before any call: an API token's agents come without their labels, and its list
      // (the public discovery) takes no filter nor page.
      if (settings.token !== null) {
        if (flags.selector !== undefined) throw new CliError(SELECTOR_NEEDS_SESSION);
        const flag = SESSION_FLAGS.find((name) => flags[name] !== undefined);
        if (flag !== undefined) throw new CliError(sessionOnly(flag));
      }
      if (flags.status !== undefined && !(AGENT_STATUSES as readonly string[]).includes(flags.status)) {
        throw new CliError(`--status: expected one of ${AGENT_STATUSES.join(', ')}, got \`${flags.status}\``);
      }
      const limit = flags.limit === undefined ? undefined : integerFlag('--limit', flags.limit, 1, 500);
      const caller = anyCaller(settings, rt);
      let agents: Agent[];
      let headers: IncomingHttpHeaders = {};
      if (caller.kind === 'token') agents = await listAgents(caller);
      else {
        const query = { selector: flags.selector, status: flags.status, q: flags.name, limit, cursor: flags.cursor };
        const answer = await caller.api
          .call<Agent[]>('GET', `/orgs/${await caller.orgId()}/agents`, { query })
          .catch((error: unknown) =>
            Promise.reject(flags.selector === undefined ? error : selectorRefusal(error, flags.selector)),
          );
        agents = answer.body;
        headers = answer.headers;
      }
      if (flags.json) printJson(rt, agents);
      else if (agents.length === 0) {
        const narrowed = flags.selector !== undefined || flags.status !== undefined || flags.name !== undefined;
        rt.out(narrowed ? 'No agent matches.\n' : 'No agents.\n');
      } else rt.out(agentTable(agents));
      sayNextPage(rt, headers, 'agents', 'drover agents', {
        selector: flags.selector,
        status: flags.status,
        name: flags.name,
        limit,
      });
    });
  configureAgentsMatchCommand(agents, rt);
  configureAgentsLabelCommand(agents, rt);
}

/** Why a flag of the organization's list needs a session. */
const sessionOnly = (flag: string) =>
  `--${flag} needs a session, as the agents an API token lists (GET /v1/agents) come unfiltered and in one answer: ` +
  'sign in with `drover login` and leave out the API token (--token, DROVER_TOKEN)';

function agentTable(agents: Agent[]): string {
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
  return formatTable(['ID', 'NAME', 'STATUS', 'LAST SEEN', 'HOSTNAME', 'OS', 'VERSION', 'LABELS'], rows);
}

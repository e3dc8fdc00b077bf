import type { RequestBody, Schema } from '@drover/shared/api';
import type { Command } from 'commander';
import { sessionCaller } from '../callers.js';
import { CliError } from '../errors.js';
import { changesAnything, parseLabelChanges } from '../labels/changes.js';
import { parseSelectorOption, selectorRefusal } from '../labels/selector.js';
import { labelsCell } from '../labels/show-labels.js';
import { printJson } from '../output/json.js';
import { formatTable } from '../output/table.js';
import type { Runtime } from '../runtime.js';
import { loadSettings } from '../settings.js';

type Relabelled = Schema<'RelabelledAgents'>;

/**
 * `drover agents label <selector> [key=value ...] [key- ...]`: the changes of `drover agent label`
 * made by the coordinator to every agent a label selector matches, as `kubectl label -l` does
 * (`POST /orgs/:orgId/agents/labels`: each agent onto its revision, revoked ones left out, nothing
 * changed when one would carry too many labels); `--dry-run` says what would change.
 */
export function configureAgentsLabelCommand(agents: Command, rt: Runtime): void {
  agents
    .command('label')
    .description(
      "change the operators' labels of every agent a label selector matches: key=value sets one, key- removes one (a session)",
    )
    .argument('<selector>', "a label selector, e.g. 'site=berlin,role=gateway' (docs/fleets.md)")
    .argument('<changes...>', 'key=value to set a label, key- to remove one')
    .option('--dry-run', 'say which agents would change and how, and change nothing')
    .option('--json', "print the API's answers (the agents changed) as JSON")
    .action(
      async (selector: string, items: string[], flags: { dryRun?: boolean; json?: boolean }, command: Command) => {
        if (parseSelectorOption(selector, 'selector').length === 0) {
          throw new CliError(
            "selector: expected at least one label requirement, e.g. 'site=berlin', got nothing (to label every agent, select a label they all have, such as os)",
          );
        }
        const changes = parseLabelChanges(items, false);
        if (!changesAnything(changes)) throw new CliError('expected a label change: key=value or key-');
        // commander gives `agents`'s own options to it wherever they stand: here they would select nothing.
        const listed = Object.keys(command.parent?.opts() ?? {}).find((name) => name !== 'json');
        if (listed !== undefined) {
          throw new CliError(`--${listed} is an option of \`drover agents\`, not of \`drover agents label\``);
        }
        const options = command.optsWithGlobals();
        const caller = sessionCaller(loadSettings(options, rt), rt);
        const body: RequestBody<'relabelAgents'> = {
          selector,
          set: changes.set,
          remove: changes.remove,
          dryRun: flags.dryRun === true,
        };
        const answer = await caller.api
          .post<Relabelled>(`/orgs/${await caller.orgId()}/agents/labels`, body)
          .catch((error: unknown) => Promise.reject(selectorRefusal(error, selector, 'body.selector')));
        if (flags.json || options.json === true) printJson(rt, answer);
        else if (answer.agents.length > 0) {
          rt.out(
            formatTable(
              ['AGENT', "OPERATORS' LABELS BEFORE", 'AFTER'],
              answer.agents.map((a) => [a.name, labelsCell(a.from), labelsCell(a.to)]),
            ),
          );
        }
        const already = answer.matching - answer.changed;
        rt.err(
          `${answer.dryRun ? 'Would change' : 'Labelled'} ${answer.changed} of ${agentsWord(answer.matching)} matching ${selector}` +
            (already > 0 ? ` (${already} ${already === 1 ? 'has' : 'have'} the labels already)` : '') +
            (answer.dryRun ? '; nothing was changed' : '') +
            '\n',
        );
      },
    );
}

const agentsWord = (n: number) => `${n} agent${n === 1 ? '' : 's'}`;

import type { Schema } from '@drover/shared/api';
import type { Command } from 'commander';
import { isDeepStrictEqual } from 'node:util';
import { sessionCaller } from '../callers.js';
import { CliError } from '../errors.js';
import { changeLabels } from '../labels/change-labels.js';
import { applyLabelChanges, changesAnything, parseLabelChanges } from '../labels/changes.js';
import { parseSelectorOption, selectorRefusal } from '../labels/selector.js';
import { labelsCell } from '../labels/show-labels.js';
import { printJson } from '../output/json.js';
import { readEveryPage } from '../output/pages.js';
import { formatTable } from '../output/table.js';
import type { Runtime } from '../runtime.js';
import { changeInTurns } from '../session/in-turns.js';
import { loadSettings } from '../settings.js';

type Agent = Schema<'Agent'>;

/** The most agents one page of the organization's list holds (the coordinator's bound). */
const PAGE = 500;

/**
 * `drover agents label <selector> [key=value ...] [key- ...] [--clear]`: the changes of `drover
 * agent label` made to every agent a label selector matches (`kubectl label -l`): the matching
 * agents are read first, every page of them, then each one's operator labels are changed onto its
 * revision (If-Match) and made again onto the labels as they are when another change came in
 * between. Revoked agents are left out; `--dry-run` says what would change and changes nothing.
 */
export function configureAgentsLabelCommand(agents: Command, rt: Runtime): void {
  agents
    .command('label')
    .description(
      "change the operators' labels of every agent a label selector matches: key=value sets one, key- removes one (a session)",
    )
    .argument('<selector>', "a label selector, e.g. 'site=berlin,role=gateway' (docs/fleets.md)")
    .argument('<changes...>', 'key=value to set a label, key- to remove one')
    .option('--clear', "remove every operator label first (the agents' own stay)")
    .option('--dry-run', 'say which agents would change and how, and change nothing')
    .option('--json', "print the API's answers (the agents changed) as JSON")
    .action(
      async (
        selector: string,
        items: string[],
        flags: { clear?: boolean; dryRun?: boolean; json?: boolean },
        command: Command,
      ) => {
        if (parseSelectorOption(selector, 'selector').length === 0) {
          throw new CliError(
            "selector: expected at least one label requirement, e.g. 'site=berlin', got nothing (to label every agent, select a label they all have, such as os)",
          );
        }
        const changes = parseLabelChanges(items, flags.clear === true);
        if (!changesAnything(changes)) throw new CliError('expected a label change: key=value or key-');
        // commander gives `agents`'s own options to it wherever they stand: here they would select nothing.
        const listed = Object.keys(command.parent?.opts() ?? {}).find((name) => name !== 'json');
        if (listed !== undefined) {
          throw new CliError(`--${listed} is an option of \`drover agents\`, not of \`drover agents label\``);
        }
        const options = command.optsWithGlobals();
        const caller = sessionCaller(loadSettings(options, rt), rt);
        const path = `/orgs/${await caller.orgId()}/agents`;
        const matching: Agent[] = [];
        await readEveryPage(
          (cursor) =>
            caller.api
              .call<Agent[]>('GET', path, { query: { selector, limit: PAGE, cursor } })
              .catch((error: unknown) => Promise.reject(selectorRefusal(error, selector))),
          undefined,
          (page) => matching.push(...page.filter((a) => a.status !== 'revoked')),
        );
        const changing = matching.filter(
          (a) => !isDeepStrictEqual(applyLabelChanges(a.operatorLabels, changes), a.operatorLabels),
        );
        const already = matching.length - changing.length;
        const summary = (verb: string, n: number) =>
          `${verb} ${n} of ${agentsWord(matching.length)} matching ${selector}` +
          (already > 0 ? ` (${already} ${already === 1 ? 'has' : 'have'} the labels already)` : '');
        if (flags.dryRun) {
          if (changing.length > 0) {
            rt.out(
              formatTable(
                ['AGENT', "OPERATORS' LABELS NOW", 'AFTER'],
                changing.map((a) => [
                  a.name,
                  labelsCell(a.operatorLabels),
                  labelsCell(applyLabelChanges(a.operatorLabels, changes)),
                ]),
              ),
            );
          }
          rt.err(`${summary('Would change', changing.length)}; nothing was changed\n`);
          return;
        }
        const changed = await changeInTurns(
          rt,
          changing,
          (a) => a.name,
          'labelled',
          (a) => changeLabels(caller, a, changes),
        );
        if (flags.json || options.json === true) printJson(rt, changed);
        else if (changed.length > 0) {
          rt.out(
            formatTable(
              ['AGENT', 'LABELS'],
              changed.map((a) => [a.name, labelsCell(a.labels)]),
            ),
          );
        }
        rt.err(`${summary('Labelled', changed.length)}\n`);
      },
    );
}

const agentsWord = (n: number) => `${n} agent${n === 1 ? '' : 's'}`;

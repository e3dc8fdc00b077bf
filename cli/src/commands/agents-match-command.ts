import type { Command } from 'commander';
import { sessionCaller } from '../callers.js';
import { CliError } from '../errors.js';
import { formatSelectorMatches, readSelectorMatches } from '../labels/selector-matches.js';
import { parseSelectorOption } from '../labels/selector.js';
import { printJson } from '../output/json.js';
import type { Runtime } from '../runtime.js';
import { loadSettings } from '../settings.js';

/** The longest workflow name an agent reports (the coordinator's bound). */
const MAX_WORKFLOW_NAME = 128;

/**
 * `drover agents match <selector> [--workflow W]`: what a trigger on that label selector would run
 * on if called now, worked out by the coordinator (`GET /orgs/:orgId/selector-matches`), changing
 * nothing: checked before a selector trigger is made or run.
 */
export function configureAgentsMatchCommand(agents: Command, rt: Runtime): void {
  agents
    .command('match')
    .description(
      'what a label selector matches now: how many agents and which, those lacking a workflow, the workflows they report (a session)',
    )
    .argument('<selector>', "a label selector, e.g. 'role=gateway,site in (berlin,munich)' (docs/fleets.md)")
    .option('--workflow <name>', 'the workflow a run would start: which of them do not report it, and its versions')
    .option('--json', "print the API's answer as JSON")
    .action(async (selector: string, flags: { workflow?: string; json?: boolean }, command: Command) => {
      if (parseSelectorOption(selector, 'selector').length === 0) {
        throw new CliError(
          "selector: expected at least one label requirement, e.g. 'role=gateway', got nothing (to reach every agent, select a label they all have, such as os)",
        );
      }
      const workflow = flags.workflow;
      if (workflow !== undefined && (workflow.trim() === '' || workflow.length > MAX_WORKFLOW_NAME)) {
        throw new CliError(
          `--workflow: expected a workflow name of 1 to ${MAX_WORKFLOW_NAME} characters, got \`${workflow}\``,
        );
      }
      // commander gives `agents`'s own options to it wherever they stand: here they would narrow nothing.
      const listed = Object.keys(command.parent?.opts() ?? {}).find((name) => name !== 'json');
      if (listed !== undefined) {
        throw new CliError(`--${listed} is an option of \`drover agents\`, not of \`drover agents match\``);
      }
      const options = command.optsWithGlobals();
      const caller = sessionCaller(loadSettings(options, rt), rt);
      const matches = await readSelectorMatches(caller, selector, workflow);
      // `--json` after the selector is `agents`'s own option too, which commander gives the parent.
      if (flags.json || options.json === true) return printJson(rt, matches);
      rt.out(formatSelectorMatches(selector, matches, workflow));
    });
}

import { matchesSelector, type Requirement } from '@drover/shared/labels';
import type { Agent, Workflow } from '../api/types';
import { counted } from '@drover/shared/counted';

/** The agents a run of a selector trigger would go to now, and those of them lacking its workflow. */
export interface SelectorMatch {
  /** Not revoked, matching, by name: one job each (the coordinator's order). */
  agents: Agent[];
  /** Those of them that do not report the workflow: their jobs would be rejected. */
  lacking: Agent[];
}

/**
 * The agents a selector trigger runs on when called now (docs/fleets.md): those its selector
 * matches, revoked ones left out, by name; and which of them do not report `workflowName`.
 */
export function selectorMatch(
  agents: readonly Agent[],
  workflows: readonly Workflow[],
  requirements: readonly Requirement[],
  workflowName: string,
): SelectorMatch {
  const matching = agents
    .filter((a) => a.status !== 'revoked' && matchesSelector(requirements, a.labels))
    .sort((a, b) => (a.name === b.name ? (a.id < b.id ? -1 : 1) : a.name < b.name ? -1 : 1));
  const name = workflowName.trim();
  const reporting = new Set(workflows.filter((w) => w.name === name).map((w) => w.agentId));
  return { agents: matching, lacking: name === '' ? [] : matching.filter((a) => !reporting.has(a.id)) };
}

/** How many names a sentence lists before it says how many more. */
const SHOWN_NAMES = 12;

/** `gw-a, gw-b and gw-c`; past a dozen, `gw-a, …, gw-l and 28 more`. */
export const namesWords = (agents: readonly Agent[]): string => listedWords(agents.map((a) => a.name));

/**
 * Names in words, `total` of them in all (more than those given: the coordinator sent the first
 * few): `gw-a, gw-b and gw-c`; past a dozen given, or fewer than the total, `gw-a, …, gw-j and 30 more`.
 */
export function listedWords(names: readonly string[], total = names.length): string {
  const shown = names.slice(0, SHOWN_NAMES);
  if (total > shown.length) return `${shown.join(', ')} and ${total - shown.length} more`;
  if (shown.length <= 1) return shown.join('');
  return `${shown.slice(0, -1).join(', ')} and ${shown[shown.length - 1]}`;
}

/**
 * What a selector trigger would run on if called now, in words, followed live (a status region):
 * `3 agents match now: gw-a, gw-b and gw-c.`, then which of them do not report the workflow (their
 * jobs would be rejected). Nothing is said of a selector that does not parse: its input says why.
 */
export function SelectorMatches(props: {
  id?: string;
  agents: readonly Agent[] | undefined;
  workflows: readonly Workflow[] | undefined;
  requirements: readonly Requirement[] | null;
  workflowName: string;
}) {
  const { requirements, workflowName } = props;
  let words: string[] = [];
  if (!props.agents) words = ['Reading the agents…'];
  else if (requirements === null) words = [];
  else if (requirements.length === 0) words = ['Type a selector to see which agents it matches.'];
  else {
    const { agents, lacking } = selectorMatch(props.agents, props.workflows ?? [], requirements, workflowName);
    const name = workflowName.trim();
    if (agents.length === 0) words = ['No agent matches now: a run is refused until one does.'];
    else {
      words = [
        `${agents.length === 1 ? '1 agent matches' : `${agents.length} agents match`} now: ${namesWords(agents)}.`,
      ];
      if (props.workflows && lacking.length === agents.length && name !== '') {
        words.push(
          agents.length === 1
            ? `It does not report the workflow ${name}: its job would be rejected.`
            : `None of them reports the workflow ${name}: every job would be rejected.`,
        );
      } else if (props.workflows && lacking.length > 0) {
        words.push(
          `${lacking.length === 1 ? `${namesWords(lacking)} does` : `${counted(lacking.length, 'agent')} (${namesWords(lacking)}) do`} not report the workflow ${name}: ${lacking.length === 1 ? 'its job' : 'their jobs'} would be rejected.`,
        );
      }
    }
  }
  return (
    <p id={props.id} role="status" className="selector-matches">
      {words.join(' ')}
    </p>
  );
}

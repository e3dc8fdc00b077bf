import type { Requirement } from '@drover/shared/labels';
import type { SelectorMatchesView } from '../api/agent-pages';
import { counted } from '@drover/shared/counted';

/** How many names a sentence lists before it says how many more. */
const SHOWN_NAMES = 12;

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
 * jobs would be rejected), as the coordinator works it out. Nothing is said of a selector that does
 * not parse: its input says why.
 */
export function SelectorMatches(props: {
  id?: string;
  /** What the coordinator said of the selector (undefined: not read yet). */
  matches: SelectorMatchesView | undefined;
  error?: Error | null;
  requirements: readonly Requirement[] | null;
  workflowName: string;
}) {
  const { matches, requirements, workflowName } = props;
  const name = workflowName.trim();
  let words: string[] = [];
  if (requirements === null) words = [];
  else if (requirements.length === 0) words = ['Type a selector to see which agents it matches.'];
  else if (props.error) words = [`The coordinator could not say which agents it matches: ${props.error.message}`];
  else if (!matches) words = ['Reading the agents…'];
  else if (matches.matching === 0) words = ['No agent matches now: a run is refused until one does.'];
  else {
    const { matching, lacking } = matches;
    words = [
      `${matching === 1 ? '1 agent matches' : `${counted(matching, 'agent')} match`} now: ${listedWords(matches.names, matching)}.`,
    ];
    const lackers = listedWords(matches.lackingNames, lacking);
    if (name !== '' && lacking === matching) {
      words.push(
        matching === 1
          ? `It does not report the workflow ${name}: its job would be rejected.`
          : `None of them reports the workflow ${name}: every job would be rejected.`,
      );
    } else if (name !== '' && lacking > 0) {
      words.push(
        `${lacking === 1 ? `${lackers} does` : `${counted(lacking, 'agent')} (${lackers}) do`} not report the workflow ${name}: ${lacking === 1 ? 'its job' : 'their jobs'} would be rejected.`,
      );
    }
  }
  return (
    <p id={props.id} role="status" className="selector-matches">
      {words.join(' ')}
    </p>
  );
}

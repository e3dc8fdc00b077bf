import type { Labels } from '@drover/shared/labels';

/** Where a label an agent carries comes from (docs/fleets.md): the agent itself, or an operator. */
export type LabelSource = 'reported' | 'operator';

const SOURCE_WORDS: Record<LabelSource, string> = {
  reported: 'reported by the agent',
  operator: 'set by an operator',
};

/**
 * Labels as compact `key=value` chips, sorted by key. An operator's label is drawn apart from a
 * reported one (a solid blue outline and a leading mark, not colour alone), and each chip says in
 * words where it comes from: in its title, and to screen readers in its text.
 */
export function LabelChips({
  labels,
  operatorLabels,
  source,
  replacedBy,
  empty = 'none',
}: {
  labels: Labels;
  /** The operators' labels of the agent: a key among them is the operator's. */
  operatorLabels?: Labels;
  /** All the chips come from this source (one list of the agent page); else decided per key. */
  source?: LabelSource;
  /** Labels that win over these (the operators', over the agent's): a key among them is marked replaced. */
  replacedBy?: Labels;
  empty?: string;
}) {
  const keys = Object.keys(labels).sort();
  if (keys.length === 0) return <span className="hint">{empty}</span>;
  return (
    <ul className="labels">
      {keys.map((key) => {
        const from: LabelSource =
          source ?? (operatorLabels && Object.hasOwn(operatorLabels, key) ? 'operator' : 'reported');
        const text = `${key}=${labels[key]}`;
        const replaced = replacedBy && Object.hasOwn(replacedBy, key);
        const words = replaced ? `${SOURCE_WORDS[from]}, replaced by an operator's` : SOURCE_WORDS[from];
        return (
          <li
            key={key}
            className={`label label-${from}${replaced ? ' label-replaced' : ''}`}
            title={`${text}: ${words}`}
          >
            <code>{text}</code>
            <span className="visually-hidden">, {words}</span>
          </li>
        );
      })}
    </ul>
  );
}

import { useState, type ReactNode } from 'react';

/** A choice of agents: its id and its name. */
export interface AgentChoice {
  id: string;
  name: string;
}

/** The most checkboxes drawn at once: a fleet's thousands are found by name, not scrolled. */
export const MOST_SHOWN = 100;

/**
 * Checkboxes to choose agents among many (a fleet's hundreds or thousands): a search by name above
 * them narrows the list as it is typed, at most MOST_SHOWN are drawn (the count of the others says
 * to narrow it), and what is chosen stays chosen while it is out of sight, counted as such.
 */
export function AgentChoices<T extends AgentChoice>(props: {
  agents: readonly T[];
  chosen: readonly string[];
  onToggle: (id: string, on: boolean) => void;
  /** What follows an agent's name in its label. */
  describe?: (agent: T) => ReactNode;
  /** Said when the search finds none. */
  noneFound: (text: string) => string;
}) {
  const { agents, chosen } = props;
  const [find, setFind] = useState('');
  const needle = find.trim().toLowerCase();
  const found = needle === '' ? agents : agents.filter((a) => a.name.toLowerCase().includes(needle));
  const shown = found.slice(0, MOST_SHOWN);
  // Sets, not list searches: the agents are filtered at each keystroke.
  const shownIds = new Set(shown.map((a) => a.id));
  const chosenIds = new Set(chosen);
  const chosenHidden = chosen.filter((id) => !shownIds.has(id)).length;
  const more = found.length - shown.length;
  return (
    <>
      <label className="find">
        <span className="visually-hidden">Find agents by name</span>
        <input type="search" value={find} onChange={(e) => setFind(e.target.value)} placeholder="Find by name" />
      </label>
      {found.length === 0 && <p className="hint">{props.noneFound(find.trim())}</p>}
      {chosenHidden > 0 && (
        <p className="hint">
          {chosenHidden === 1 ? '1 chosen agent is' : `${chosenHidden} chosen agents are`} not shown here.
        </p>
      )}
      <div className="bind-choices">
        {shown.map((a) => (
          <label key={a.id} className="check">
            <input
              type="checkbox"
              checked={chosenIds.has(a.id)}
              onChange={(e) => props.onToggle(a.id, e.target.checked)}
            />
            <span>
              {a.name}
              {props.describe && <> {props.describe(a)}</>}
            </span>
          </label>
        ))}
      </div>
      {more > 0 && (
        <p className="hint">
          {more === 1 ? '1 more agent matches' : `${more.toLocaleString('en-US')} more agents match`}: find{' '}
          {more === 1 ? 'it' : 'them'} by name.
        </p>
      )}
    </>
  );
}

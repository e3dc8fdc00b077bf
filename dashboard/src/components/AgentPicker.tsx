import { useQuery } from '@tanstack/react-query';
import { useId, useState } from 'react';
import { shortId } from '@drover/shared/short-id';
import { agentSearchQuery } from '../api/agent-pages';

/**
 * A choice of one agent among a fleet's thousands: a select of the AGENT_PICKS agents whose name or
 * hostname holds what is typed in the search beside it (the coordinator finds them, `?q=`), the
 * chosen one kept in it while out of the search, and how many more match. `Agent` is its label,
 * or, with `select` (a form's field), the label the form gives that id.
 */
export function AgentPicker(props: {
  orgId: string;
  /** The chosen agent's id, or '' for none. */
  value: string;
  /** Its name, when known (else its short id stands in). */
  valueName: string | undefined;
  onChange: (id: string) => void;
  /** What the select says for no agent. */
  none: string;
  /** Revoked agents are not offered (a trigger's agent), unless chosen already. */
  active?: boolean;
  /** The select as a form's field: its id (labelled by the form), and what says it is invalid. */
  select?: { id: string; 'aria-invalid'?: boolean; 'aria-describedby'?: string };
}) {
  const { orgId, value } = props;
  const [text, setText] = useState('');
  const id = useId();
  const found = useQuery(agentSearchQuery(orgId, text.trim()));
  const all = found.data?.items ?? [];
  const items = props.active ? all.filter((a) => a.status !== 'revoked' || a.id === value) : all;
  const more = (found.data?.total ?? 0) - all.length;
  const chosenOut = value !== '' && !items.some((a) => a.id === value);
  const choice = (
    <select
      // Named by itself too: a label's name would take in the chosen option's.
      {...(props.select ?? { 'aria-label': 'Agent' })}
      value={value}
      onChange={(e) => props.onChange(e.target.value)}
    >
      <option value="">{props.none}</option>
      {chosenOut && <option value={value}>{props.valueName ?? shortId(value)}</option>}
      {items.map((a) => (
        <option key={a.id} value={a.id}>
          {a.name}
        </option>
      ))}
    </select>
  );
  return (
    <>
      {props.select ? (
        choice
      ) : (
        <label>
          Agent
          {choice}
        </label>
      )}
      <label>
        Find an agent
        <input
          type="search"
          value={text}
          onChange={(e) => setText(e.target.value)}
          placeholder="name or hostname"
          aria-describedby={more > 0 ? `${id}-more` : undefined}
        />
      </label>
      {more > 0 && (
        <span className="hint" id={`${id}-more`} role="status">
          {more === 1 ? '1 more agent matches' : `${more.toLocaleString('en-US')} more agents match`}: type more of the
          name.
        </span>
      )}
    </>
  );
}

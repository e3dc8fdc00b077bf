import type { QueryKey } from '@tanstack/react-query';
import { useId, useState } from 'react';
import { shortId } from '@drover/shared/short-id';
import { enterFinds, moreMatch, useNameSearch, type NameSearch } from './name-search';

/** What a picker says of the things it offers: "agent", "Find an agent", … */
export interface PickerWords {
  /** The select's label: "Agent". */
  label: string;
  /** The search's label: "Find an agent". */
  find: string;
  placeholder: string;
  /** "agent", "agents": how many more match. */
  one: string;
  many: string;
}

/**
 * A choice of one among thousands: a select of the few whose name holds what is typed in the
 * search beside it (the coordinator finds them, `?q=&limit=`), the chosen one kept in it while out
 * of the search, and how many more match. The select is labelled by `words.label`, or, with
 * `select` (a form's field), by the label the form gives that id.
 */
export function SearchPicker<T extends { id: string; name: string }, K extends QueryKey>(props: {
  search: NameSearch<T, K>;
  words: PickerWords;
  /** The chosen item's id, or '' for none. */
  value: string;
  /** Its name, when known (else its short id stands in). */
  valueName: string | undefined;
  onChange: (id: string) => void;
  /** What the select says for no item. */
  none: string;
  /** Only these of the found are offered (the chosen one always). */
  offered?: (item: T) => boolean;
  /** The select as a form's field: its id (labelled by the form), and what says it is invalid. */
  select?: { id: string; 'aria-invalid'?: boolean; 'aria-describedby'?: string };
}) {
  const { value, words } = props;
  const { text, setText, items: all, more } = useNameSearch(props.search);
  // The name of the item last chosen here: the page may not know it (a draft filter not applied
  // yet), and once the search moves on it is out of the items found.
  const [picked, setPicked] = useState<{ id: string; name: string } | null>(null);
  const id = useId();
  const offered = props.offered;
  const items = offered ? all.filter((item) => offered(item) || item.id === value) : all;
  const chosenOut = value !== '' && !items.some((item) => item.id === value);
  const choice = (
    <select
      // Named by itself too: a label's name would take in the chosen option's.
      {...(props.select ?? { 'aria-label': words.label })}
      value={value}
      onChange={(e) => {
        const item = items.find((one) => one.id === e.target.value);
        if (item) setPicked({ id: item.id, name: item.name });
        props.onChange(e.target.value);
      }}
    >
      <option value="">{props.none}</option>
      {chosenOut && (
        <option value={value}>{props.valueName ?? (picked?.id === value ? picked.name : shortId(value))}</option>
      )}
      {items.map((item) => (
        <option key={item.id} value={item.id}>
          {item.name}
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
          {words.label}
          {choice}
        </label>
      )}
      <label>
        {words.find}
        <input
          type="search"
          value={text}
          onChange={(e) => setText(e.target.value)}
          onKeyDown={enterFinds}
          placeholder={words.placeholder}
          aria-describedby={more > 0 ? `${id}-more` : undefined}
        />
      </label>
      {/* A live region there from the start: one inserted with its text is not always announced. */}
      <span className="hint" id={`${id}-more`} role="status">
        {more > 0 && `${moreMatch(more, words)}: type more of the name.`}
      </span>
    </>
  );
}

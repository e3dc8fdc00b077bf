import type { QueryKey } from '@tanstack/react-query';
import { useId, type ReactNode } from 'react';
import { ErrorMessage } from './ErrorMessage';
import { enterFinds, moreMatch, useNameSearch, type NameSearch } from './name-search';

/** What a list of choices says of the things it offers: "Find agents by name", "agent", … */
export interface ChoiceWords {
  /** The search's label: "Find agents by name". */
  find: string;
  placeholder: string;
  /** "agent", "agents": how many more match. */
  one: string;
  many: string;
}

/**
 * Checkboxes to choose several among thousands (a fleet's agents, an organization's triggers):
 * those whose name holds what is typed in the search above them, a page the coordinator finds
 * (`?q=&limit=`), and how many more match. What is chosen is kept by the caller as items, not ids,
 * so that its names are known wherever they are said; the chosen ones out of the search are listed
 * first, ticked, so that they can be seen and unticked.
 */
export function SearchChoices<T extends { id: string; name: string }, K extends QueryKey>(props: {
  search: NameSearch<T, K>;
  words: ChoiceWords;
  chosen: readonly T[];
  onToggle: (item: T, on: boolean) => void;
  /** Only these of the found are offered. */
  offered?: (item: T) => boolean;
  /** What follows an item's name in its label. */
  describe?: (item: T) => ReactNode;
  /** Said when the search finds none. */
  noneFound: (text: string) => string;
  /** Said when there is none at all (nothing typed). */
  noneAtAll: string;
  /** Said when some are found but none of them is offered. */
  noneOffered?: string;
}) {
  const { chosen, words, offered, describe } = props;
  const { text, setText, found, items: all, more } = useNameSearch(props.search);
  const id = useId();
  const chosenIds = new Set(chosen.map((item) => item.id));
  const offeredFound = offered ? all.filter(offered) : all;
  const items = offeredFound.filter((item) => !chosenIds.has(item.id));
  const box = (item: T, on: boolean) => (
    <label key={item.id} className="check">
      <input type="checkbox" checked={on} onChange={(e) => props.onToggle(item, e.target.checked)} />
      <span>
        {item.name}
        {describe && <> {describe(item)}</>}
      </span>
    </label>
  );
  return (
    <>
      <label className="find">
        <span className="visually-hidden">{words.find}</span>
        <input
          type="search"
          value={text}
          onChange={(e) => setText(e.target.value)}
          onKeyDown={enterFinds}
          placeholder={words.placeholder}
          aria-describedby={`${id}-found`}
        />
      </label>
      <div className="bind-choices">
        {chosen.map((item) => box(item, true))}
        {items.map((item) => box(item, false))}
      </div>
      <p className="hint" id={`${id}-found`} role="status">
        {found.data && all.length === 0 && (text.trim() === '' ? props.noneAtAll : props.noneFound(text.trim()))}
        {all.length > 0 && offeredFound.length === 0 && props.noneOffered && `${props.noneOffered} `}
        {more > 0 && `${moreMatch(more, words)}: find ${more === 1 ? 'it' : 'them'} by name.`}
      </p>
      <ErrorMessage error={found.error} />
    </>
  );
}

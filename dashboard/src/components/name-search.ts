import { useQuery, type QueryKey, type UseQueryOptions } from '@tanstack/react-query';
import { useState, type KeyboardEvent } from 'react';
import type { Page } from '../api/client';

/** The query of the items whose name holds a text (every item when it is empty), a page. */
export type NameSearch<T, K extends QueryKey> = (text: string) => UseQueryOptions<Page<T>, Error, Page<T>, K>;

/**
 * A search by name over a list the coordinator pages (`?q=&limit=`): the text typed, the page found
 * for it, and how many more than that page match.
 */
export function useNameSearch<T, K extends QueryKey>(search: NameSearch<T, K>) {
  const [text, setText] = useState('');
  const found = useQuery(search(text.trim()));
  const items = found.data?.items ?? [];
  return { text, setText, found, items, more: (found.data?.total ?? 0) - items.length };
}

/** "1 more agent matches", "1,204 more agents match". */
export const moreMatch = (more: number, words: { one: string; many: string }): string =>
  more === 1 ? `1 more ${words.one} matches` : `${more.toLocaleString('en-US')} more ${words.many} match`;

/**
 * A search box's keydown inside a form: Enter there finds (the search runs as it is typed), it does
 * not submit the form around it, which would issue a token or create a trigger half chosen.
 */
export const enterFinds = (event: KeyboardEvent<HTMLInputElement>): void => {
  if (event.key === 'Enter') event.preventDefault();
};

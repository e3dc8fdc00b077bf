import { useState } from 'react';
import { NavigationType, useNavigationType, useSearchParams } from 'react-router';

/**
 * A text input kept in the address's query (`?<name>=`) as it is typed, so that the view it
 * filters can be linked to and survives a reload. Typing replaces the history entry (no entry per
 * key stroke) and the input keeps what was typed while the address catches up; a navigation made
 * elsewhere (a link, back or forward) gives the input the address's value.
 */
export function useSearchText(name: string): [string, (next: string) => void] {
  const [search, setSearch] = useSearchParams();
  const navigationType = useNavigationType();
  const inAddress = search.get(name) ?? '';
  const [text, setText] = useState(inAddress);
  const [address, setAddress] = useState(inAddress);
  if (inAddress !== address) {
    // Adjusted while rendering (React's pattern for state that follows a prop): no extra pass.
    setAddress(inAddress);
    if (navigationType !== NavigationType.Replace) setText(inAddress);
  }
  const change = (next: string) => {
    setText(next);
    setSearch(
      (current) => {
        const params = new URLSearchParams(current);
        if (next === '') params.delete(name);
        else params.set(name, next);
        return params;
      },
      { replace: true },
    );
  };
  return [text, change];
}

import { useEffect, useState, type ChangeEvent } from 'react';
import { useSearchParams } from 'react-router';

/**
 * A list page's filters, kept in the address's search parameters `keys` (empty ones left out):
 * the filters as the address has them, the address's search itself, and `apply(filters)`, which
 * goes to the address of other filters and returns its search (a filter form's `onApply`).
 */
export function useAddressFilters<Key extends string>(keys: readonly Key[]) {
  const [search, setSearch] = useSearchParams();
  const filters: Partial<Record<Key, string>> = {};
  for (const key of keys) {
    const value = search.get(key);
    if (value) filters[key] = value;
  }
  const apply = (next: Partial<Record<Key, string>>) => {
    const params = new URLSearchParams();
    for (const key of keys) if (next[key]) params.set(key, next[key]);
    setSearch(params);
    return params.toString();
  };
  return { search, filters, address: search.toString(), apply };
}

/**
 * A filter form's draft: its fields as typed, drawn by `fieldsOf` from the filters in the address,
 * with `set(field)` for an input's or a select's change, `apply(filters)` for its submit and
 * `clear()` for its Clear button; `onApply` goes to the address of the filters and returns it (its
 * search). The fields start from the address's filters, and start over from them whenever the
 * address changes (a link) or the browser goes back or forward, except when the change is the
 * one this form just applied: the router shows a new address at once and draws it a moment later,
 * and what was typed or chosen meanwhile must stay. Back or forward starts over whatever the
 * address: a navigation this form made that the router had yet to draw may have been dropped for
 * it, the address drawn then being the same as before. The form itself stays: re-created (a `key`
 * of the address) it would take the button just pressed with it, and the keyboard would be
 * dropped on the page's body.
 */
export function useFilterDraft<Filters extends object, Fields extends Record<string, string>>(
  fieldsOf: (filters: Partial<Filters>) => Fields,
  filters: Filters,
  address: string,
  onApply: (filters: Partial<Filters>) => string,
) {
  const [draft, setDraft] = useState(() => fieldsOf(filters));
  const [drawn, setDrawn] = useState({ address, moves: 0 });
  // The address this form went to, until the router draws it.
  const [pending, setPending] = useState<string | null>(null);
  // Back and forward, counted.
  const [moves, setMoves] = useState(0);
  useEffect(() => {
    const moved = () => setMoves((n) => n + 1);
    window.addEventListener('popstate', moved);
    return () => window.removeEventListener('popstate', moved);
  }, []);
  if (address !== drawn.address || moves !== drawn.moves) {
    // Adjusted while rendering (React's pattern for state that follows a prop): no extra pass.
    const ours = moves === drawn.moves && address === pending;
    setDrawn({ address, moves });
    setPending(null);
    if (!ours) setDraft(fieldsOf(filters));
  }
  const set = (field: keyof Fields) => (event: ChangeEvent<HTMLInputElement | HTMLSelectElement>) => {
    const value = event.target.value;
    setDraft((fields) => ({ ...fields, [field]: value }));
  };
  const apply = (next: Partial<Filters>) => {
    // Emptied or tidied here too: the same filters leave the address as it is, nor would the fields change.
    setDraft(fieldsOf(next));
    const target = onApply(next);
    setPending(target === address ? null : target);
  };
  const clear = () => apply({});
  return { draft, setDraft, set, apply, clear };
}

/** A filter form's two buttons: apply what is typed, or show everything again. */
export function FilterButtons({ onClear }: { onClear: () => void }) {
  return (
    <>
      <button type="submit">Filter</button>
      <button type="button" onClick={onClear}>
        Clear
      </button>
    </>
  );
}

import { useState, type ChangeEvent } from 'react';

/**
 * A filter form's draft: its fields as typed, drawn by `fieldsOf` from the filters in the address,
 * with `set(field)` for an input's or a select's change, `apply(filters)` for its submit and
 * `clear()` for its Clear button. The fields start from the address's filters, and start over from
 * them whenever the address changes (a link, back or forward), except when the change is the one
 * this form just applied: the router draws the new address a moment after it shows it, and what
 * was typed or chosen meanwhile must stay. The form itself stays: re-created (a `key` of the
 * address) it would take the button just pressed with it, and the keyboard would be dropped on the
 * page's body.
 */
export function useFilterDraft<Filters extends object, Fields extends Record<string, string>>(
  fieldsOf: (filters: Partial<Filters>) => Fields,
  filters: Filters,
  address: string,
  onApply: (filters: Partial<Filters>) => void,
) {
  const [draft, setDraft] = useState(() => fieldsOf(filters));
  const [drawnFrom, setDrawnFrom] = useState(address);
  // The fields of the filters this form applied last, until the address shows them.
  const [applied, setApplied] = useState<Fields | null>(null);
  if (address !== drawnFrom) {
    // Adjusted while rendering (React's pattern for state that follows a prop): no extra pass.
    setDrawnFrom(address);
    setApplied(null);
    const fields = fieldsOf(filters);
    if (applied === null || !sameFields(fields, applied)) setDraft(fields);
  }
  const set = (field: keyof Fields) => (event: ChangeEvent<HTMLInputElement | HTMLSelectElement>) => {
    const value = event.target.value;
    setDraft((fields) => ({ ...fields, [field]: value }));
  };
  const apply = (next: Partial<Filters>) => {
    const fields = fieldsOf(next);
    // The same filters leave the address as it is: nothing will come to match them.
    setApplied(sameFields(fields, fieldsOf(filters)) ? null : fields);
    onApply(next);
  };
  const clear = () => {
    // Emptied here too: with no filter applied the address does not change, nor would they.
    setDraft(fieldsOf({}));
    apply({});
  };
  return { draft, setDraft, set, apply, clear };
}

function sameFields(a: Record<string, string>, b: Record<string, string>): boolean {
  return Object.keys(a).every((key) => a[key] === b[key]);
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

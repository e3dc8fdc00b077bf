import { useState, type ChangeEvent, type Dispatch, type SetStateAction } from 'react';

/**
 * A filter form's fields as typed, drawn from the filters in the address: they start from them, and
 * start over from them whenever the address's filters change (the form applied, Clear, a link, back
 * or forward). The form itself stays: re-created (a `key` of the address) it would take the button
 * just pressed with it, and the keyboard would be dropped on the page's body.
 */
export function useDraft<T>(fromAddress: () => T, address: string): [T, Dispatch<SetStateAction<T>>] {
  const [draft, setDraft] = useState(fromAddress);
  const [drawnFrom, setDrawnFrom] = useState(address);
  if (address !== drawnFrom) {
    // Adjusted while rendering (React's pattern for state that follows a prop): no extra pass.
    setDrawnFrom(address);
    setDraft(fromAddress());
  }
  return [draft, setDraft];
}

/**
 * A filter form's draft (useDraft) over the fields `fieldsOf` draws from the address's filters,
 * with `set(field)` for an input's or a select's change and `clear()` for its Clear button.
 */
export function useFilterDraft<Filters extends object, Fields extends Record<string, string>>(
  fieldsOf: (filters: Partial<Filters>) => Fields,
  filters: Filters,
  address: string,
  onApply: (filters: Partial<Filters>) => void,
) {
  const [draft, setDraft] = useDraft(() => fieldsOf(filters), address);
  const set = (field: keyof Fields) => (event: ChangeEvent<HTMLInputElement | HTMLSelectElement>) => {
    const value = event.target.value;
    setDraft((fields) => ({ ...fields, [field]: value }));
  };
  const clear = () => {
    // Emptied here too: with no filter applied the address does not change, nor would they.
    setDraft(fieldsOf({}));
    onApply({});
  };
  return { draft, setDraft, set, clear };
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

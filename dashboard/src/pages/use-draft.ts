import { useState, type Dispatch, type SetStateAction } from 'react';

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

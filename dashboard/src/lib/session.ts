import { useSyncExternalStore } from 'react';

/**
 * Whether a background read of this page was refused because the session ended (expired, signed
 * out in another tab). The page stays as it is, with what was typed in it, under a banner that
 * leads to sign-in (Shell.tsx); a read that succeeds again (signed in in another tab) clears it.
 */
let ended = false;
const listeners = new Set<() => void>();

export function setSessionEnded(value: boolean): void {
  if (ended === value) return;
  ended = value;
  for (const listener of listeners) listener();
}

export function useSessionEnded(): boolean {
  return useSyncExternalStore(
    (listener) => {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    () => ended,
  );
}

/** `2026-03-01T10:00` (a datetime-local input, the browser's time zone) ⇄ an ISO time. */
export const toLocalInput = (iso: string | undefined): string => {
  if (!iso) return '';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return '';
  return new Date(d.getTime() - d.getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
};

/**
 * A time the browser cannot read (the picker takes years up to 275760, a Date only those it can
 * hold: `toISOString` would throw, and the form would do nothing) is sent as typed: the API names it.
 */
export const fromLocalInput = (value: string): string | undefined => {
  if (!value) return undefined;
  const d = new Date(value);
  return Number.isNaN(d.getTime()) ? value : d.toISOString();
};

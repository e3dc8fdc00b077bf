/** `2026-03-01T10:00` (a datetime-local input, the browser's time zone) ⇄ an ISO time. */
export const toLocalInput = (iso: string | undefined): string => {
  if (!iso) return '';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return '';
  return new Date(d.getTime() - d.getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
};

export const fromLocalInput = (value: string): string | undefined =>
  value ? new Date(value).toISOString() : undefined;

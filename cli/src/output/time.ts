/** `12s ago`, `5m ago`, `3h ago`, `4d ago`; `-` for none; `in 2m` for a time to come. */
export function ago(iso: string | null | undefined, now = Date.now()): string {
  if (!iso) return '-';
  const at = Date.parse(iso);
  if (!Number.isFinite(at)) return iso;
  const seconds = Math.round((now - at) / 1000);
  const text = span(Math.abs(seconds));
  return seconds >= 0 ? `${text} ago` : `in ${text}`;
}

/** A length of time in its largest unit: `45s`, `12m`, `3h`, `9d`. */
export function span(seconds: number): string {
  if (seconds < 60) return `${seconds}s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m`;
  if (seconds < 86_400) return `${Math.floor(seconds / 3600)}h`;
  return `${Math.floor(seconds / 86_400)}d`;
}

/** How long a job ran: `1.2s`, `3m 05s`, `1h 02m`; `-` when it did not run. */
export function elapsed(from: string | null | undefined, to: string | null | undefined): string {
  if (!from || !to) return '-';
  const ms = Date.parse(to) - Date.parse(from);
  if (!Number.isFinite(ms) || ms < 0) return '-';
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)}s`;
  const s = Math.round(ms / 1000);
  if (s < 3600) return `${Math.floor(s / 60)}m ${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h ${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}

/** A timestamp as `2026-11-25 09:58:00Z`. */
export function shortTime(iso: string | null | undefined): string {
  if (!iso) return '-';
  return iso.replace('T', ' ').replace(/\.\d+Z$/, 'Z');
}

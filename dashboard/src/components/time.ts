const relative = new Intl.RelativeTimeFormat('en', { numeric: 'auto' });

/** "12 seconds ago", "3 hours ago": how long ago an ISO time was, from `now`. */
export function ago(iso: string, now = Date.now()): string {
  const seconds = Math.round((new Date(iso).getTime() - now) / 1000);
  const abs = Math.abs(seconds);
  if (abs < 60) return relative.format(seconds, 'second');
  if (abs < 3600) return relative.format(Math.round(seconds / 60), 'minute');
  if (abs < 86_400) return relative.format(Math.round(seconds / 3600), 'hour');
  return relative.format(Math.round(seconds / 86_400), 'day');
}

export const dateTime = (iso: string): string => new Date(iso).toLocaleString();

/**
 * An HTTP `Retry-After` (whole seconds, or an HTTP date) in milliseconds from `nowMs`; null when
 * absent or unreadable. The agent's stream and the `drover` command line both honour it.
 *
 * It can be 0: `Retry-After: 0`, or a date already past, which is what a date near now reads as on
 * a clock ahead of the server's (pass the server's time as `nowMs` when it is known). Callers that
 * try again in a loop wait a floor of their own (the agent's stream a second at least, the command
 * line's outage waits too): 0 must not make a loop of attempts.
 */
export function retryAfterMs(header: string | string[] | undefined, nowMs = Date.now()): number | null {
  const value = (Array.isArray(header) ? header[0] : header)?.trim();
  if (!value) return null;
  if (/^\d{1,9}$/.test(value)) return Number(value) * 1_000;
  // An HTTP date begins with the day's name (`Sun, 06 Nov 1994 08:49:37 GMT`); Date.parse alone
  // would take `-1` or `1.5` for dates long past.
  const at = /^[a-z]{3}/i.test(value) ? Date.parse(value) : NaN;
  return Number.isNaN(at) ? null : Math.max(0, at - nowMs);
}

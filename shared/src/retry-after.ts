/**
 * An HTTP `Retry-After` (whole seconds, or an HTTP date) in milliseconds from `nowMs`; null when
 * absent or unreadable. The agent's stream and the `drover` command line both honour it.
 */
export function retryAfterMs(header: string | string[] | undefined, nowMs = Date.now()): number | null {
  const value = (Array.isArray(header) ? header[0] : header)?.trim();
  if (!value) return null;
  if (/^\d{1,9}$/.test(value)) return Number(value) * 1_000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : Math.max(0, at - nowMs);
}

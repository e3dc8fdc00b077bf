/**
 * The expiry the API tokens page's issue form sends for its choice (`expiry`: `never`, `at`, or a
 * lifetime in ms): "in 7 days" and the like as seconds the coordinator counts from the issue on its
 * own clock (this browser's may be off by hours or days), a date as an ISO time; a date the browser
 * cannot read is sent as typed (the API names it).
 */
export function expiryOf(d: { expiry: string; expiresAt: string }): {
  expiresAt?: string | null;
  expiresInSeconds?: number;
} {
  if (d.expiry === 'never') return { expiresAt: null };
  if (d.expiry !== 'at') return { expiresInSeconds: Number(d.expiry) / 1000 };
  const local = new Date(d.expiresAt);
  return { expiresAt: Number.isNaN(local.getTime()) ? d.expiresAt : local.toISOString() };
}

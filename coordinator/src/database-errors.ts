/**
 * How the database says it cannot be reached (PostgreSQL: node-postgres and the server), apart from
 * the queries it refuses; SQLite, a local file, has no such failure.
 */

/** Errors of the network on the way to PostgreSQL, as Node reports them. */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EPIPE',
  'EAI_AGAIN',
]);
/**
 * SQLSTATEs of a server that cannot take the query now: class 08 (connection exception),
 * 57P01-57P03 (shut down by an administrator, crashed, cannot connect now: starting or in
 * recovery), 53300 (too many connections).
 */
const UNAVAILABLE_STATE = /^(08[0-9A-Z]{3}|57P0[1-3]|53300)$/;
/** node-postgres's own messages for a connection lost or never made (pool.ts's connection timeout). */
const DRIVER_MESSAGES = [
  /^Connection terminated/,
  /^timeout exceeded when trying to connect$/,
  /^Client has encountered a connection error/,
];

/**
 * Whether `error` says the PostgreSQL database could not be reached or could not take the query
 * (answered 503 `unavailable`: http/error-handler.ts), as opposed to a query it refused.
 */
export function isDatabaseUnreachable(error: Error): boolean {
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && (NETWORK_CODES.has(code) || UNAVAILABLE_STATE.test(code))) return true;
  return DRIVER_MESSAGES.some((pattern) => pattern.test(error.message));
}

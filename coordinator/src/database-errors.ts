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

/** Errors met while a connection to PostgreSQL was being opened (db/postgres/pool.ts tells them). */
const connectFailures = new WeakSet<Error>();

/**
 * Marks `error` as met while opening a connection: whatever its SQLSTATE, the server refused the
 * connection (the database closed to connections, `pg_hba.conf` rejecting this host, the role not
 * allowed to log in, its password changed), no query of the request, and it lasts until the
 * operator opens it again. Gives `error`.
 */
export function markConnectFailure(error: Error): Error {
  connectFailures.add(error);
  return error;
}

/**
 * Whether `error` says the PostgreSQL database could not be reached or could not take the query
 * (answered 503 `unavailable`: http/error-handler.ts), as opposed to a query it refused.
 */
export function isDatabaseUnreachable(error: Error): boolean {
  if (connectFailures.has(error)) return true;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && (NETWORK_CODES.has(code) || UNAVAILABLE_STATE.test(code))) return true;
  return DRIVER_MESSAGES.some((pattern) => pattern.test(error.message));
}

/**
 * SQLite's (better-sqlite3's `code`, the extended result code's name) and PostgreSQL's (SQLSTATE)
 * refusals of any write for a cause outside the request: each lasts until the operator acts (frees
 * space, makes the file system writable, fails over to a primary), and the transaction that met
 * it was rolled back whole.
 */
const UNWRITABLE: readonly { code: RegExp; what: string; fix: string }[] = [
  { code: /^SQLITE_FULL$/, what: 'its disk is full', fix: 'freed space' },
  { code: /^53100$/, what: 'its disk is full', fix: 'freed space' },
  { code: /^SQLITE_READONLY/, what: 'it is read-only', fix: 'made its file and directory writable' },
  { code: /^SQLITE_IOERR/, what: 'its disk answers with I/O errors', fix: 'repaired the disk' },
  {
    code: /^25006$/,
    what: 'it is read-only, a standby or a database set read-only',
    fix: 'pointed the coordinator at a primary that takes writes',
  },
];

/**
 * Why the database cannot take writes, when `error` says so: its disk full, its file or file
 * system read-only, I/O errors, or (PostgreSQL) a standby that refuses writes. Answered 503
 * `unavailable` (http/error-handler.ts), as opposed to a 500: nothing was written, and the same
 * request succeeds once the operator has acted. Null for any other error.
 */
export function databaseUnwritable(error: Error): { what: string; fix: string; code: string } | null {
  const code = (error as { code?: unknown }).code;
  if (typeof code !== 'string') return null;
  const found = UNWRITABLE.find((u) => u.code.test(code));
  return found ? { what: found.what, fix: found.fix, code } : null;
}

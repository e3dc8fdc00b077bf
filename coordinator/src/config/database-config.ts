/**
 * Where the coordinator keeps its state (docs/operations.md, "Database"): `DROVER_DATABASE_URL` /
 * `--database-url`. Unset: the embedded SQLite file in the data directory.
 * `postgres://user:password@host:port/database` (or `postgresql://`): a PostgreSQL database.
 */
export type DatabaseConfig =
  | { readonly kind: 'sqlite' }
  | {
      readonly kind: 'postgres';
      /** The URL as given, password included: for the driver only, never for a message or a log line. */
      readonly url: string;
      /** The same URL with its password replaced by `****`: for messages and logs. */
      readonly redactedUrl: string;
    };

/** Query parameters the driver (node-postgres) understands that an operator may need. */
const QUERY_KEYS = ['sslmode', 'sslrootcert', 'sslcert', 'sslkey', 'application_name', 'host'];
const SSL_MODES = ['disable', 'prefer', 'require', 'no-verify', 'verify-ca', 'verify-full'];
const EXPECTED = 'expected postgres://<user>:<password>@<host>[:<port>]/<database> (or postgresql://)';

/** The URL with its password, if any, replaced by `****`. Text that is not a URL gives null. */
export function redactUrlPassword(text: string): string | null {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return null;
  }
  if (url.password) url.password = '****';
  return url.toString();
}

/** A setting's text as a message may repeat it: as given, unless it is a URL with a password (then `****`). */
export function shownUrl(text: string): string {
  const redacted = redactUrlPassword(text);
  return redacted !== null && new URL(text).password ? redacted : text;
}

/** Parses the setting; each problem is pushed to `problems`, naming `source` and never the password. */
export function parseDatabaseUrl(
  raw: { value: string; source: string } | undefined,
  problems: string[],
): DatabaseConfig {
  if (!raw) return { kind: 'sqlite' };
  const text = raw.value.trim();
  if (text === '') {
    problems.push(`${raw.source}: ${EXPECTED}, got an empty string`);
    return { kind: 'sqlite' };
  }
  const redactedUrl = redactUrlPassword(text);
  if (redactedUrl === null) {
    // Not even a URL: nothing of it is echoed, it may hold the password.
    problems.push(`${raw.source}: ${EXPECTED}, got a value that is not a URL`);
    return { kind: 'sqlite' };
  }
  const url = new URL(text);
  if (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:') {
    problems.push(`${raw.source}: ${EXPECTED}, got the scheme \`${url.protocol}\``);
    return { kind: 'sqlite' };
  }
  const before = problems.length;
  const socketDir = url.searchParams.get('host');
  if (url.hostname === '' && !socketDir) {
    problems.push(`${raw.source}: expected a host name in the URL, got \`${redactedUrl}\``);
  }
  if (socketDir !== null && !socketDir.startsWith('/')) {
    problems.push(`${raw.source}: expected host to be the absolute path of a socket directory, got \`${socketDir}\``);
  }
  if (url.port === '0') problems.push(`${raw.source}: expected a port from 1 to 65535, got \`0\``);
  const database = decodeURIComponent(url.pathname.replace(/^\//, ''));
  if (database === '' || database.includes('/')) {
    problems.push(`${raw.source}: expected the database name as the URL's path, got \`${redactedUrl}\``);
  }
  for (const key of url.searchParams.keys()) {
    if (!QUERY_KEYS.includes(key)) {
      problems.push(`${raw.source}: unknown parameter \`${key}\` (known: ${QUERY_KEYS.join(', ')})`);
    }
  }
  const sslmode = url.searchParams.get('sslmode');
  if (sslmode !== null && !SSL_MODES.includes(sslmode)) {
    problems.push(`${raw.source}: expected sslmode to be one of ${SSL_MODES.join(', ')}, got \`${sslmode}\``);
  }
  if (url.hash) problems.push(`${raw.source}: expected no fragment (#...) in the URL`);
  if (problems.length > before) return { kind: 'sqlite' };
  return Object.freeze({ kind: 'postgres', url: text, redactedUrl });
}

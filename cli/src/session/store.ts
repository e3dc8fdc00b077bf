import fs from 'node:fs';
import path from 'node:path';
import { isAgentError, writeFileAtomic } from '@drover/agent/client';
import { CliError } from '../errors.js';

/** A dashboard session as `drover login` keeps it. */
export interface StoredSession {
  /** The coordinator it was opened on, `http(s)://host[:port]`. */
  url: string;
  token: string;
  expiresAt: string;
  email: string;
  userId: string;
  /**
   * The coordinator's clock minus this machine's when the session was opened (ms; from the answer's
   * `Date` header): `expiresAt` is a time of the coordinator's clock. Absent in older files: 0.
   */
  clockOffsetMs?: number;
}

/**
 * Whether the session is past its `expiresAt` on the coordinator's clock as this machine knew it
 * when the session was opened: a machine whose clock is hours ahead would otherwise call a session
 * the coordinator still takes expired.
 */
export function sessionExpired(session: StoredSession, now = Date.now()): boolean {
  const expires = Date.parse(session.expiresAt);
  return Number.isFinite(expires) && expires <= now + (session.clockOffsetMs ?? 0);
}

export const SESSION_FILE = 'session.json';

export const sessionPath = (configDir: string) => path.join(configDir, SESSION_FILE);

/** The stored session, or null when there is none. A file that is not one is an error saying how to mend it. */
export function readSession(configDir: string): StoredSession | null {
  const file = sessionPath(configDir);
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw new CliError(`cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = null;
  }
  const s = parsed as Partial<StoredSession> | null;
  const fields = ['url', 'token', 'expiresAt', 'email', 'userId'] as const;
  if (!s || typeof s !== 'object' || !fields.every((f) => typeof s[f] === 'string')) {
    throw new CliError(`${file} is not a drover session; run \`drover logout\` and sign in again`);
  }
  if (s.clockOffsetMs !== undefined && !Number.isFinite(s.clockOffsetMs)) delete s.clockOffsetMs;
  return s as StoredSession;
}

/**
 * Keeps the session in `<configDir>/session.json`, readable by its owner only: the directory
 * 0700, the file 0600, written atomically.
 */
export function writeSession(configDir: string, session: StoredSession): string {
  const file = sessionPath(configDir);
  try {
    fs.mkdirSync(configDir, { recursive: true, mode: 0o700 });
    fs.chmodSync(configDir, 0o700);
    writeFileAtomic(file, `${JSON.stringify(session, null, 2)}\n`);
  } catch (error) {
    if (isAgentError(error)) throw new CliError(error.message, undefined, { cause: error });
    throw new CliError(`cannot write ${file}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`);
  }
  return file;
}

/** Deletes the session file; false when there was none. */
export function deleteSession(configDir: string): boolean {
  const file = sessionPath(configDir);
  try {
    fs.unlinkSync(file);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw new CliError(`cannot delete ${file}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`);
  }
}

import fs from 'node:fs';
import type { ServerSecretRepository } from '../model/server-secrets.js';

/** A key as the database keeps it for every coordinator, and what became of the data directory's file. */
export interface SharedSecret {
  value: string;
  /** The data directory holds a key file with another value: ignored, the database's is used. */
  fileIgnored: boolean;
}

/** A key file's content (trimmed), or null when there is none. */
export function readKeyFile(file: string): string | null {
  try {
    return fs.readFileSync(file, 'utf8').trim();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
}

/**
 * A key that every coordinator on one database must hold alike (on PostgreSQL: docs/operations.md,
 * "Several coordinators"), kept in `server_secrets` under `name`. The first coordinator to store it
 * wins: one upgraded from a single instance offers the key of its data directory's `file`
 * (adopted, so nothing changes for what it signed or sealed), a new one a fresh key (`create`).
 * The file is never written nor removed; `check` throws on a file that is not a valid key.
 */
export async function sharedSecret(
  secrets: ServerSecretRepository,
  name: string,
  file: string,
  create: () => string,
  at: string,
  check: (value: string) => void,
): Promise<SharedSecret> {
  const fromFile = readKeyFile(file);
  if (fromFile !== null) check(fromFile);
  const value = await secrets.getOrCreate(name, () => fromFile ?? create(), at);
  return { value, fileIgnored: fromFile !== null && fromFile !== value };
}

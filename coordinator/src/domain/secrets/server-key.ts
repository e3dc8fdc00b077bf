import fs from 'node:fs';
import path from 'node:path';
import type { KeyObject } from 'node:crypto';
import { generateEd25519KeyPair, privateKeyFromBase64, publicKeyOf, signBytes } from '@drover/shared';
import type { ServerSecretRepository } from '../model/server-secrets.js';
import { sharedSecret } from './shared-secret.js';

/**
 * The coordinator's Ed25519 identity: on SQLite, created once in the data directory (mode 0600),
 * then reused; on PostgreSQL, kept in the database for every coordinator on it
 * (`loadSharedServerKey`). Agents pin its public key at enrollment and verify signed manifests
 * with it.
 */
export interface ServerKey {
  /** Standard base64 of the raw 32-byte public key. */
  publicKey: string;
  sign(message: Uint8Array): string;
}

export const SERVER_KEY_FILE = 'server-ed25519.key';
/** Its name in `server_secrets`; the value is the file's: standard base64 of the 32-byte seed. */
export const SERVER_KEY_SECRET = 'server_ed25519_key';

export function loadOrCreateServerKey(dataDir: string): ServerKey {
  const file = path.join(dataDir, SERVER_KEY_FILE);
  let seed: string;
  try {
    seed = fs.readFileSync(file, 'utf8').trim();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    seed = generateEd25519KeyPair().privateKey;
    try {
      // wx: never overwrite a key another process created in the meantime.
      fs.writeFileSync(file, `${seed}\n`, { mode: 0o600, flag: 'wx' });
    } catch (raced) {
      if ((raced as NodeJS.ErrnoException).code !== 'EEXIST') throw raced;
      seed = fs.readFileSync(file, 'utf8').trim();
    }
  }
  const key = serverKeyOf(seed, file);
  const mode = fs.statSync(file).mode & 0o777;
  if (mode & 0o077) fs.chmodSync(file, 0o600);
  return key;
}

/**
 * The server key of coordinators sharing a database (`server_secrets`, SERVER_KEY_SECRET): the
 * data directory's key file, if any, is adopted into a database that has none, so an upgraded
 * single coordinator keeps its identity; otherwise a new key is made there. `fileIgnored`: the
 * data directory holds another key, which is not used.
 */
export async function loadSharedServerKey(
  dataDir: string,
  secrets: ServerSecretRepository,
  at: string,
): Promise<{ key: ServerKey; fileIgnored: boolean }> {
  const file = path.join(dataDir, SERVER_KEY_FILE);
  // A corrupt file is refused before it could be adopted.
  const { value, fileIgnored } = await sharedSecret(
    secrets,
    SERVER_KEY_SECRET,
    file,
    () => generateEd25519KeyPair().privateKey,
    at,
    (seed) => void serverKeyOf(seed, file),
  );
  return { key: serverKeyOf(value, `${SERVER_KEY_SECRET} in server_secrets`), fileIgnored };
}

function serverKeyOf(seed: string, where: string): ServerKey {
  let privateKey: KeyObject;
  try {
    privateKey = privateKeyFromBase64(seed);
  } catch (cause) {
    throw new Error(`The server key ${where} is corrupt (expected base64 of a 32-byte Ed25519 seed)`, { cause });
  }
  return { publicKey: publicKeyOf(privateKey), sign: (message) => signBytes(privateKey, message) };
}

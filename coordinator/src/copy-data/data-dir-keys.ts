import fs from 'node:fs';
import path from 'node:path';
import { privateKeyFromBase64 } from '@drover/shared';
import { SECRETS_KEY_FILE, SECRETS_KEY_SECRET } from '../domain/secrets/secret-box.js';
import { SERVER_KEY_FILE, SERVER_KEY_SECRET } from '../domain/secrets/server-key.js';
import { readKeyFile } from '../domain/secrets/shared-secret.js';

export interface DataDirKey {
  /** The secret's name in `server_secrets`. */
  name: string;
  file: string;
  value: string;
  /** The file's modification time (ISO 8601): the best guess at when the key was made. */
  createdAt: string;
}

/**
 * Reads the two key files of a data directory, to be stored in `server_secrets` (under
 * SERVER_KEY_SECRET and SECRETS_KEY_SECRET, each value the file's content), without creating
 * either (a key that is absent is left out: a coordinator that never started has none), and
 * checks that each is what the coordinator would accept; a corrupt one throws, naming the file.
 */
export function readDataDirKeys(dataDir: string): DataDirKey[] {
  const keys: DataDirKey[] = [];
  const serverKey = readKey(dataDir, SERVER_KEY_FILE, SERVER_KEY_SECRET);
  if (serverKey) {
    try {
      privateKeyFromBase64(serverKey.value);
    } catch (cause) {
      throw new Error(`The server key ${serverKey.file} is corrupt (expected base64 of a 32-byte Ed25519 seed)`, {
        cause,
      });
    }
    keys.push(serverKey);
  }
  const secretsKey = readKey(dataDir, SECRETS_KEY_FILE, SECRETS_KEY_SECRET);
  if (secretsKey) {
    if (Buffer.from(secretsKey.value, 'base64').length !== 32) {
      throw new Error(`The secrets key ${secretsKey.file} is corrupt (expected base64 of 32 bytes)`);
    }
    keys.push(secretsKey);
  }
  return keys;
}

function readKey(dataDir: string, fileName: string, name: string): DataDirKey | null {
  const file = path.join(dataDir, fileName);
  const value = readKeyFile(file);
  return value === null ? null : { name, file, value, createdAt: fs.statSync(file).mtime.toISOString() };
}

import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { ServerSecretRepository } from '../model/server-secrets.js';
import { sharedSecret } from './shared-secret.js';

/**
 * Seals secrets the coordinator must keep and use again (a chat workspace's token) with
 * AES-256-GCM. On SQLite the key is kept in the data directory beside the database, not in it: a
 * copy of the database alone does not reveal them. On PostgreSQL every coordinator must open what
 * another sealed, so the key is kept in the database (`loadSharedSecretBox`; docs/decisions.md,
 * "Several coordinators"). A sealed value is `v1.<iv>.<tag>.<ciphertext>`
 * (base64url); opening one that was altered, or sealed under another key, throws.
 */
export class SecretBox {
  constructor(private readonly key: Buffer) {
    if (key.length !== 32) throw new Error('A secret box needs a 32-byte key');
  }

  seal(plain: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    const data = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return ['v1', iv, cipher.getAuthTag(), data]
      .map((p) => (typeof p === 'string' ? p : p.toString('base64url')))
      .join('.');
  }

  open(sealed: string): string {
    const [version, iv, tag, data] = sealed.split('.');
    if (version !== 'v1' || iv === undefined || tag === undefined || data === undefined) {
      throw new Error('Not a sealed secret');
    }
    const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64url'));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(data, 'base64url')), decipher.final()]).toString('utf8');
  }
}

export const SECRETS_KEY_FILE = 'secrets.key';
/** Its name in `server_secrets`; the value is the file's: standard base64 of the 32-byte key. */
export const SECRETS_KEY_SECRET = 'secrets_key';

/** The data directory's secrets key (created once, mode 0600) as a SecretBox. */
export function loadOrCreateSecretBox(dataDir: string): SecretBox {
  const file = path.join(dataDir, SECRETS_KEY_FILE);
  let encoded: string;
  try {
    encoded = fs.readFileSync(file, 'utf8').trim();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    encoded = randomBytes(32).toString('base64');
    try {
      // wx: never overwrite a key another process created in the meantime.
      fs.writeFileSync(file, `${encoded}\n`, { mode: 0o600, flag: 'wx' });
    } catch (raced) {
      if ((raced as NodeJS.ErrnoException).code !== 'EEXIST') throw raced;
      encoded = fs.readFileSync(file, 'utf8').trim();
    }
  }
  const box = secretBoxOf(encoded, file);
  if (fs.statSync(file).mode & 0o077) fs.chmodSync(file, 0o600);
  return box;
}

/**
 * The secret box of coordinators sharing a database (`server_secrets`, SECRETS_KEY_SECRET): the
 * data directory's key file, if any, is adopted into a database that has none, so the chat tokens
 * an upgraded single coordinator sealed still open; otherwise a new key is made there.
 * `fileIgnored`: the data directory holds another key, which is not used.
 */
export async function loadSharedSecretBox(
  dataDir: string,
  secrets: ServerSecretRepository,
  at: string,
): Promise<{ box: SecretBox; fileIgnored: boolean }> {
  const file = path.join(dataDir, SECRETS_KEY_FILE);
  const { value, fileIgnored } = await sharedSecret(
    secrets,
    SECRETS_KEY_SECRET,
    file,
    () => randomBytes(32).toString('base64'),
    at,
    (encoded) => void secretBoxOf(encoded, file),
  );
  return { box: secretBoxOf(value, `${SECRETS_KEY_SECRET} in server_secrets`), fileIgnored };
}

function secretBoxOf(encoded: string, where: string): SecretBox {
  const key = Buffer.from(encoded, 'base64');
  if (key.length !== 32) throw new Error(`The secrets key ${where} is corrupt (expected base64 of 32 bytes)`);
  return new SecretBox(key);
}

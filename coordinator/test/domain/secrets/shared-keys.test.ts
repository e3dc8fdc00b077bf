import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ServerSecretRepository } from '../../../src/domain/model/server-secrets.js';
import {
  loadOrCreateSecretBox,
  loadSharedSecretBox,
  SECRETS_KEY_FILE,
  SECRETS_KEY_SECRET,
} from '../../../src/domain/secrets/secret-box.js';
import {
  loadOrCreateServerKey,
  loadSharedServerKey,
  SERVER_KEY_FILE,
  SERVER_KEY_SECRET,
} from '../../../src/domain/secrets/server-key.js';

/**
 * The keys coordinators on one PostgreSQL database share (server_secrets): a data directory's key
 * is adopted into a database that has none, every other coordinator uses the database's, and the
 * files are never written.
 */

const AT = '2026-01-02T03:04:05.000Z';
const tempDir = () => fs.mkdtempSync(path.join(os.tmpdir(), 'drover-shared-key-'));

/** server_secrets as the repositories keep it: the first value stored wins. */
function secretsTable(): ServerSecretRepository & { rows: Map<string, string> } {
  const rows = new Map<string, string>();
  return {
    rows,
    async getOrCreate(name, create) {
      if (!rows.has(name)) rows.set(name, create());
      return rows.get(name)!;
    },
    async get(name) {
      return rows.get(name) ?? null;
    },
  };
}

describe('the server key of coordinators sharing a database', () => {
  it("adopts an upgraded coordinator's key file, and gives it to every other coordinator", async () => {
    const secrets = secretsTable();
    const upgraded = tempDir();
    const before = loadOrCreateServerKey(upgraded);
    const adopted = await loadSharedServerKey(upgraded, secrets, AT);
    expect(adopted).toMatchObject({ fileIgnored: false });
    expect(adopted.key.publicKey).toBe(before.publicKey);
    expect(secrets.rows.get(SERVER_KEY_SECRET)).toBe(
      fs.readFileSync(path.join(upgraded, SERVER_KEY_FILE), 'utf8').trim(),
    );
    const fresh = tempDir();
    const other = await loadSharedServerKey(fresh, secrets, AT);
    expect(other.key.publicKey).toBe(before.publicKey);
    // Nothing is written into the other coordinator's data directory.
    expect(fs.readdirSync(fresh)).toEqual([]);
  });

  it("makes a key in an empty database, and ignores a data directory's other key", async () => {
    const secrets = secretsTable();
    const first = await loadSharedServerKey(tempDir(), secrets, AT);
    const stray = tempDir();
    const strayKey = loadOrCreateServerKey(stray);
    const second = await loadSharedServerKey(stray, secrets, AT);
    expect(second.key.publicKey).toBe(first.key.publicKey);
    expect(second.key.publicKey).not.toBe(strayKey.publicKey);
    expect(second.fileIgnored).toBe(true);
  });

  it('refuses a corrupt key file rather than adopt it', async () => {
    const secrets = secretsTable();
    const dir = tempDir();
    fs.writeFileSync(path.join(dir, SERVER_KEY_FILE), 'garbage\n', { mode: 0o600 });
    await expect(loadSharedServerKey(dir, secrets, AT)).rejects.toThrow(/corrupt/);
    expect(secrets.rows.size).toBe(0);
  });
});

describe('the secrets key of coordinators sharing a database', () => {
  it('opens on every coordinator what the upgraded one sealed', async () => {
    const secrets = secretsTable();
    const upgraded = tempDir();
    const sealed = loadOrCreateSecretBox(upgraded).seal('xoxb-chat-token');
    const adopted = await loadSharedSecretBox(upgraded, secrets, AT);
    expect(adopted.box.open(sealed)).toBe('xoxb-chat-token');
    const other = await loadSharedSecretBox(tempDir(), secrets, AT);
    expect(other.box.open(sealed)).toBe('xoxb-chat-token');
    expect(other.box.open(adopted.box.seal('again'))).toBe('again');
    expect(secrets.rows.has(SECRETS_KEY_SECRET)).toBe(true);
  });

  it('refuses a corrupt key file rather than adopt it', async () => {
    const dir = tempDir();
    fs.writeFileSync(path.join(dir, SECRETS_KEY_FILE), 'c2hvcnQ=\n', { mode: 0o600 });
    await expect(loadSharedSecretBox(dir, secretsTable(), AT)).rejects.toThrow(/corrupt/);
  });
});

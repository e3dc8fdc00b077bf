import type { Db } from '../database.js';

/**
 * Server-wide secrets that every coordinator sharing the database must agree on (the session
 * signing key, the presign HMAC key). Created once; `getOrCreate` is race-free.
 */
export interface ServerSecretRepository {
  getOrCreate(name: string, create: () => string, at: string): Promise<string>;
}

export function createServerSecretRepository(db: Db): ServerSecretRepository {
  const insert = db.prepare('INSERT OR IGNORE INTO server_secrets (name, value, created_at) VALUES (?, ?, ?)');
  const get = db.prepare<[string], { value: string }>('SELECT value FROM server_secrets WHERE name = ?');
  return {
    async getOrCreate(name, create, at) {
      insert.run(name, create(), at);
      const row = get.get(name);
      if (!row) throw new Error(`server secret ${name} could not be stored`);
      return row.value;
    },
  };
}

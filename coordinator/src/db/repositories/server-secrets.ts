import type { ServerSecretRepository } from '../../domain/model/server-secrets.js';
import type { Db } from '../database.js';

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

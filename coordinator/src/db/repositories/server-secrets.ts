import type { ServerSecretRepository } from '../../domain/model/server-secrets.js';
import { command, values, type Database } from '../sql/index.js';

const INSERT = command<[string, string, string]>(
  'INSERT INTO server_secrets (name, value, created_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING',
);
const VALUE = values<string, [string]>('SELECT value FROM server_secrets WHERE name = ?');

export function createServerSecretRepository(db: Database): ServerSecretRepository {
  return {
    async getOrCreate(name, create, at) {
      // The first value stored wins, whichever coordinator stores it: every one reads it back.
      await db.run(INSERT, [name, create(), at]);
      const value = await db.one(VALUE, [name]);
      if (value === null) throw new Error(`server secret ${name} could not be stored`);
      return value;
    },
    get(name) {
      return db.one(VALUE, [name]);
    },
  };
}

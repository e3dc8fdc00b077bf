import type { ServerSecretRepository } from '../../../domain/model/server-secrets.js';
import type { PgPool } from '../pool.js';
import { one, run } from '../rows.js';

/** The first coordinator to store a secret wins; every other one reads the stored value. */
export function createServerSecretRepository(pool: PgPool): ServerSecretRepository {
  return {
    async getOrCreate(name, create, at) {
      await run(
        pool,
        'INSERT INTO server_secrets (name, value, created_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING',
        [name, create(), at],
      );
      const row = await one<{ value: string }>(pool, 'SELECT value FROM server_secrets WHERE name = $1', [name]);
      if (!row) throw new Error(`server secret ${name} could not be stored`);
      return row.value;
    },
  };
}

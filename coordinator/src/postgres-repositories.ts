import type { PgPool } from './db/postgres/pool.js';
import { createRepositories } from './db/repositories/index.js';
import { PostgresDatabase } from './db/sql/postgres.js';
import type { Repositories } from './domain/model/repositories.js';
import { transactionRules } from './domain/transaction-rules.js';

/**
 * The repositories on a PostgreSQL pool, with the domain's decisions that run inside their writes
 * (domain/model/transaction-rules.ts): the same repositories as sqlite-repositories.ts makes.
 */
export function createPostgresRepositories(pool: PgPool): Repositories {
  return createRepositories(new PostgresDatabase(pool), transactionRules);
}

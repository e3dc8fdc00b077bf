import type { PgPool } from './db/postgres/pool.js';
import { createRepositories } from './db/postgres/repositories/index.js';
import type { Repositories } from './domain/model/repositories.js';
import { transactionRules } from './domain/transaction-rules.js';

/**
 * The repositories on a PostgreSQL pool, with the domain's decisions that run inside their writes
 * (domain/model/transaction-rules.ts): the PostgreSQL twin of sqlite-repositories.ts.
 */
export function createPostgresRepositories(pool: PgPool): Repositories {
  return createRepositories(pool, transactionRules);
}

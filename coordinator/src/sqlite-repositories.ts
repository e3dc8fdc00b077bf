import type { Db } from './db/database.js';
import { keptForTheTurn } from './db/repositories/change-counter.js';
import { createRepositories } from './db/repositories/index.js';
import { SqliteDatabase } from './db/sql/sqlite.js';
import { GroupCommitExecutor, type WriteExecutor } from './db/writer/executor.js';
import type { Repositories } from './domain/model/repositories.js';
import { transactionRules } from './domain/transaction-rules.js';

/**
 * The repositories on a SQLite connection, with the domain's decisions that run inside their
 * writes (domain/model/transaction-rules.ts). This wiring is the one place that knows both the
 * database and the domain's rules; the coordinator, the CLI and tests make repositories here.
 * `writes` defaults to a group-commit executor on the same connection.
 */
export function createSqliteRepositories(db: Db, writes: WriteExecutor = new GroupCommitExecutor(db)): Repositories {
  return createRepositories(new SqliteDatabase(db, writes), transactionRules, { keepGeneration: keptForTheTurn(db) });
}

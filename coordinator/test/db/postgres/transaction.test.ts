import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isDatabaseUnreachable } from '../../../src/database-errors.js';
import { createPool, type PgPool } from '../../../src/db/postgres/pool.js';
import { inTransaction } from '../../../src/db/postgres/transaction.js';
import { freshPostgresDatabase, type TestDatabase } from '../../postgres/database.js';

/**
 * A transaction whose connection fails under it (PostgreSQL restarted, its backend terminated):
 * the transaction fails as the database being unreachable, and the process goes on. node-postgres
 * emits `error` on such a connection; unheard, it was an uncaught exception that ended the
 * coordinator (Vitest reports it as an unhandled error, failing this file).
 */

let database: TestDatabase;
let pool: PgPool;
const idleErrors: Error[] = [];

beforeAll(async () => {
  database = await freshPostgresDatabase();
  pool = createPool(database.url, { max: 2, onIdleError: (error) => idleErrors.push(error) });
});
afterAll(async () => {
  await pool?.end();
  await database?.drop();
});

describe('a PostgreSQL transaction', () => {
  it('whose backend is terminated fails as unreachable, and the next one runs on a new connection', async () => {
    const failed = await inTransaction(pool, async (tx) => {
      const { rows } = await tx.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      // As `pg_terminate_backend` by an administrator, or a fast shutdown, would.
      await pool.query('SELECT pg_terminate_backend($1)', [rows[0]!.pid]);
      await tx.query('SELECT 1');
    }).catch((error: Error) => error);
    expect(failed).toBeInstanceOf(Error);
    expect(isDatabaseUnreachable(failed as Error)).toBe(true);

    const { rows } = await inTransaction(pool, (tx) => tx.query<{ one: number }>('SELECT 1 AS one'));
    expect(rows).toEqual([{ one: 1 }]);
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isDatabaseUnreachable } from '../../../src/database-errors.js';
import { createPool, type PgPool } from '../../../src/db/postgres/pool.js';
import { inTransaction } from '../../../src/db/postgres/transaction.js';
import { freshPostgresDatabase, type TestDatabase } from '../../postgres/database.js';

/**
 * A PostgreSQL server that refuses new connections to the database, for a reason whose SQLSTATE
 * says nothing of reachability (here `ALLOW_CONNECTIONS false`, 55000; a `pg_hba.conf` reject,
 * 28000; a changed password, 28P01): the refusal is the database being unreachable (503), where it
 * was answered 500 `internal`.
 */

let database: TestDatabase;
/** On the server's `postgres` database: a database's connections are closed from another one. */
let admin: PgPool;
/** A connection to the test database opened before it refused new ones. */
let opened: PgPool;

beforeAll(async () => {
  database = await freshPostgresDatabase();
  const adminUrl = new URL(database.url);
  adminUrl.pathname = '/postgres';
  admin = createPool(adminUrl.href, { max: 1 });
  opened = createPool(database.url, { max: 1 });
  await opened.query('SELECT 1');
  await admin.query(`ALTER DATABASE "${database.name}" ALLOW_CONNECTIONS false`);
});
afterAll(async () => {
  await admin?.query(`ALTER DATABASE "${database.name}" ALLOW_CONNECTIONS true`);
  await opened?.end();
  await admin?.end();
  await database?.drop();
});

describe('a pool on a database that refuses connections', () => {
  it('fails queries and transactions as the database being unreachable', async () => {
    const pool = createPool(database.url, { max: 1 });
    try {
      const refused = await pool.query('SELECT 1').catch((error: Error) => error);
      expect(refused).toBeInstanceOf(Error);
      expect((refused as { code?: string }).code).toBe('55000');
      expect(isDatabaseUnreachable(refused as Error)).toBe(true);

      const inTx = await inTransaction(pool, (tx) => tx.query('SELECT 1')).catch((error: Error) => error);
      expect(isDatabaseUnreachable(inTx as Error)).toBe(true);
    } finally {
      await pool.end();
    }
  });

  it('still tells a query the server refused from an unreachable database', async () => {
    // The connection opened before goes on working: what it is refused is the query's own fault.
    const refused = await opened.query('SELECT * FROM no_such_table').catch((error: Error) => error);
    expect(isDatabaseUnreachable(refused as Error)).toBe(false);
  });
});

import type pg from 'pg';
import { afterAll, beforeAll, expect } from 'vitest';
import type { Db } from '../../src/db/database.js';
import { createPool, type PgPool } from '../../src/db/postgres/pool.js';
import type { Repositories } from '../../src/domain/model/repositories.js';
import { createPostgresRepositories } from '../../src/postgres-repositories.js';
import { freshPostgresDatabase, type TestDatabase } from '../postgres/database.js';

/**
 * The plan of a statement a repository ran, as the database chose it for the parameters of that
 * call: each `all` of the connection's statements (SQLite) or each query of the pool (PostgreSQL)
 * is kept with its parameters; `planOf` finds the one call whose SQL matches and explains it.
 * Install before the repositories are made (they prepare their statements once).
 */
export function recordSqlitePlans(db: Db): { reset(): void; planOf(sql: RegExp): string } {
  let ran: { sql: string; params: unknown[] }[] = [];
  const prepare = db.prepare.bind(db);
  db.prepare = ((sql: string) => {
    const statement = prepare(sql);
    const all = statement.all.bind(statement);
    return Object.assign(statement, {
      all: (...params: unknown[]) => {
        ran.push({ sql, params });
        return all(...params);
      },
    });
  }) as Db['prepare'];
  return {
    reset: () => void (ran = []),
    planOf(sql) {
      const calls = ran.filter((r) => sql.test(r.sql));
      expect(calls).toHaveLength(1);
      return (prepare(`EXPLAIN QUERY PLAN ${calls[0]!.sql}`).all(...calls[0]!.params) as { detail: string }[])
        .map((step) => step.detail)
        .join('\n');
    },
  };
}

/** `recordSqlitePlans` for a PostgreSQL pool (`EXPLAIN`). */
export function recordPostgresPlans(pool: PgPool): { reset(): void; planOf(sql: RegExp): Promise<string> } {
  let ran: pg.QueryConfig[] = [];
  const query = pool.query.bind(pool) as (config: pg.QueryConfig) => Promise<unknown>;
  (pool as unknown as { query: unknown }).query = (config: pg.QueryConfig) => {
    ran.push(config);
    return query(config);
  };
  return {
    reset: () => void (ran = []),
    async planOf(sql) {
      const calls = ran.filter((r) => sql.test(r.text));
      expect(calls).toHaveLength(1);
      const { rows } = (await query({ text: `EXPLAIN ${calls[0]!.text}`, values: calls[0]!.values })) as {
        rows: { 'QUERY PLAN': string }[];
      };
      return rows.map((r) => r['QUERY PLAN']).join('\n');
    },
  };
}

/**
 * A migrated PostgreSQL database of the describe block's own, for the rest of it: `seed` fills it
 * (and reads its statistics, as autovacuum's ANALYZE would), then its queries' plans are recorded
 * (`recordPostgresPlans`) and its repositories made. Dropped after the block.
 */
export function postgresPlanDatabase(seed: (pool: PgPool) => Promise<void>): {
  plans(): ReturnType<typeof recordPostgresPlans>;
  repos(): Repositories;
} {
  let database: TestDatabase | undefined;
  let pool: PgPool | undefined;
  let plans: ReturnType<typeof recordPostgresPlans>;
  let repos: Repositories;
  beforeAll(async () => {
    database = await freshPostgresDatabase({ migrated: true });
    pool = createPool(database.url);
    await seed(pool);
    plans = recordPostgresPlans(pool);
    repos = createPostgresRepositories(pool);
  });
  afterAll(async () => {
    await pool?.end();
    await database?.drop();
  });
  return { plans: () => plans, repos: () => repos };
}

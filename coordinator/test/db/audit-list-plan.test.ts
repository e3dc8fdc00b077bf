import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase, type Db } from '../../src/db/database.js';
import { migrate } from '../../src/db/migrate.js';
import { createSqliteRepositories } from '../../src/sqlite-repositories.js';
import type { Repositories } from '../../src/domain/model/repositories.js';
import { postgresPlanDatabase, recordSqlitePlans } from './statement-plans.js';

const AT = '2030-01-01T00:00:00.000Z';
/** The audit list's statement, whichever index leads it. */
const LIST = /^SELECT \* FROM audit_log WHERE/;

/**
 * The plans of the audit list (GET /v1/orgs/:orgId/audit) over a log of token discovery entries
 * with a few others among the oldest: a filter no discovery entry meets walks the index of the
 * others (migration 0051, PostgreSQL 0034), not the organization's every entry.
 */
describe('audit list plans (SQLite)', () => {
  let db: Db;
  let repos: Repositories;
  let plans: ReturnType<typeof recordSqlitePlans>;

  beforeEach(() => {
    db = openDatabase(':memory:');
    migrate(db);
    db.prepare("INSERT INTO orgs (id, name, created_at) VALUES ('o', 'o', ?)").run(AT);
    const insert = db.prepare(
      `INSERT INTO audit_log (org_id, actor_type, actor_id, action, target_type, target_id, metadata, created_at)
       VALUES ('o', ?, ?, ?, ?, ?, '{}', ?)`,
    );
    db.transaction(() => {
      insert.run('user', 'u1', 'member.update', 'user', 'u2', AT);
      for (let i = 0; i < 2000; i++) insert.run('api_token', 'tok', 'api_token.discover', null, null, AT);
    })();
    // No ANALYZE: the coordinator never runs it, so its planner has no statistics either.
    plans = recordSqlitePlans(db);
    repos = createSqliteRepositories(db);
  });
  afterEach(() => db.close());

  it('walks the entries other than discovery for a filter no discovery entry meets (0051)', async () => {
    for (const filter of [{ action: 'member.update' }, { actorType: 'user' as const }, { targetType: 'user' }]) {
      plans.reset();
      const entries = await repos.audit.list('o', { limit: 50, ...filter });
      expect(entries.map((e) => e.action)).toEqual(['member.update']);
      expect(plans.planOf(LIST), JSON.stringify(filter)).toContain('USING INDEX audit_log_beyond_discovery (org_id=?');
    }
  });

  it('walks every entry of the organization for discovery, or a token as the actor', async () => {
    for (const filter of [{ action: 'api_token.discover' }, { actorType: 'api_token' as const }, {}]) {
      plans.reset();
      expect(await repos.audit.list('o', { limit: 5, ...filter })).toHaveLength(5);
      expect(plans.planOf(LIST), JSON.stringify(filter)).toContain('USING INDEX audit_log_org (org_id=?');
    }
  });
});

describe('audit list plans (PostgreSQL)', () => {
  const db = postgresPlanDatabase(async (pool) => {
    await pool.query(`INSERT INTO orgs (id, name, created_at) VALUES ('o', 'o', $1)`, [AT]);
    await pool.query(
      `INSERT INTO audit_log (org_id, actor_type, actor_id, action, target_type, target_id, metadata, created_at)
       VALUES ('o', 'user', 'u1', 'member.update', 'user', 'u2', '{}', $1)`,
      [AT],
    );
    // 20,000 discovery entries after it, the statistics read (autovacuum's ANALYZE).
    await pool.query(
      `INSERT INTO audit_log (org_id, actor_type, actor_id, action, target_type, target_id, metadata, created_at)
       SELECT 'o', 'api_token', 'tok', 'api_token.discover', NULL, NULL, '{}', $1 FROM generate_series(1, 20000)`,
      [AT],
    );
    await pool.query('ANALYZE audit_log');
  });

  it('walks the entries other than discovery for a filter no discovery entry meets (0034)', async () => {
    db.plans().reset();
    const entries = await db.repos().audit.list('o', { limit: 50, action: 'member.update' });
    expect(entries.map((e) => e.action)).toEqual(['member.update']);
    expect(await db.plans().planOf(LIST)).toMatch(/Index Scan using audit_log_beyond_discovery on audit_log/);
  });
});

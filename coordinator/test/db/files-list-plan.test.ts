import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase, type Db } from '../../src/db/database.js';
import { migrate } from '../../src/db/migrate.js';
import { createSqliteRepositories } from '../../src/sqlite-repositories.js';
import type { FileListQuery } from '../../src/domain/model/files.js';
import type { Repositories } from '../../src/domain/model/repositories.js';
import { postgresPlanDatabase, recordSqlitePlans } from './statement-plans.js';

const AT = '2030-01-01T00:00:00.000Z';
const LIST: Omit<FileListQuery, 'status'> = {
  orgId: 'o',
  bindingIds: null,
  bindingId: null,
  after: null,
  limit: 200,
};

/**
 * The plans of the statement the files lists run (GET /v1/storage/files, GET /v1/orgs/:orgId/files),
 * for the parameters the repository gave it (statement-plans.ts).
 */
describe('files list plans (SQLite)', () => {
  let db: Db;
  let repos: Repositories;
  let planOfList: () => string;

  beforeEach(() => {
    db = openDatabase(':memory:');
    migrate(db);
    db.prepare("INSERT INTO orgs (id, name, created_at) VALUES ('o', 'o', ?)").run(AT);
    db.prepare(
      "INSERT INTO storage_bindings (id, org_id, name, backend, created_at) VALUES ('b', 'o', 'b', 'local', ?)",
    ).run(AT);
    // Active files, and one being deleted among the oldest.
    const insert = db.prepare(
      `INSERT INTO files (id, org_id, binding_id, filename, content_type, status, cleanup_rule, created_at,
         upload_expires_at, blob_key, origin)
       VALUES (?, 'o', 'b', 'f', 'text/plain', ?, 'persistent', ?, ?, ?, 'api')`,
    );
    db.transaction(() => {
      for (let i = 1; i <= 2000; i++) insert.run(`f${i}`, i === 3 ? 'deleting' : 'active', AT, AT, `k${i}`);
    })();
    // No ANALYZE: the coordinator never runs it, so its planner has no statistics either.
    const plans = recordSqlitePlans(db);
    planOfList = () => plans.planOf(/^SELECT f\.\*, f\.rowid AS list_key/);
    repos = createSqliteRepositories(db);
  });
  afterEach(() => db.close());

  it('reads the files of a status from their index, not every file (0050)', async () => {
    const page = await repos.files.list({ ...LIST, status: 'deleting' });
    expect(page.files.map((f) => f.id)).toEqual(['f3']);
    expect(planOfList()).toContain('USING INDEX files_org_status (org_id=? AND status=? AND created_at<?)');
  });

  it('seeks a page after a cursor in the index of the newest files', async () => {
    const page = await repos.files.list({ ...LIST, status: null, after: { createdAt: AT, key: 10 }, limit: 2 });
    expect(page.files.map((f) => f.id)).toEqual(['f9', 'f8']);
    expect(planOfList()).toContain('USING INDEX files_org_created (org_id=? AND created_at<?)');
  });
});

describe('files list plans (PostgreSQL)', () => {
  const db = postgresPlanDatabase(async (pool) => {
    await pool.query(`INSERT INTO orgs (id, name, created_at) VALUES ('o', 'o', $1)`, [AT]);
    await pool.query(
      `INSERT INTO storage_bindings (id, org_id, name, backend, created_at) VALUES ('b', 'o', 'b', 'local', $1)`,
      [AT],
    );
    // 20,000 active files, one being deleted among the oldest, the statistics read (autovacuum's
    // ANALYZE).
    await pool.query(
      `INSERT INTO files (id, org_id, binding_id, filename, content_type, status, cleanup_rule, created_at,
         upload_expires_at, blob_key, origin)
       SELECT 'f' || i, 'o', 'b', 'f', 'text/plain', CASE WHEN i = 3 THEN 'deleting' ELSE 'active' END,
         'persistent', $1, $1, 'k' || i, 'api'
       FROM generate_series(1, 20000) AS i`,
      [AT],
    );
    await pool.query('ANALYZE files');
  });

  it('reads the files of a status from their index, not every file (0033)', async () => {
    db.plans().reset();
    const page = await db.repos().files.list({ ...LIST, status: 'deleting' });
    expect(page.files.map((f) => f.id)).toEqual(['f3']);
    const plan = await db.plans().planOf(/^SELECT f\.\*, f\.seq AS list_key/);
    expect(plan).toMatch(/Index Scan using files_org_status on files/);
  });
});

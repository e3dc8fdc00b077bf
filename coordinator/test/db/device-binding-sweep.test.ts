import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase, type Db } from '../../src/db/database.js';
import { migrate } from '../../src/db/migrate.js';
import { ACTIVE_WINDOW_SIZE } from '../../src/db/repositories/device-bindings.js';
import { GroupCommitExecutor } from '../../src/db/writer/executor.js';
import type { Repositories } from '../../src/domain/model/repositories.js';
import { createSqliteRepositories } from '../../src/sqlite-repositories.js';

const AT = '2030-01-01T00:00:00.000Z';
/** Ids that sort as their number does: the update jobs' order is the window's. */
const jobId = (i: number) => `job-${String(i).padStart(6, '0')}`;

/**
 * The sweep's look at the update jobs in progress goes a window at a time (the contract suite
 * proves on both databases that an ended one is found; this proves the windows, once, on SQLite).
 */
describe('device bindings: the sweep looks at the update jobs in progress a window at a time', () => {
  let db: Db;
  let repos: Repositories;
  const count = ACTIVE_WINDOW_SIZE + 1;

  beforeEach(() => {
    db = openDatabase(':memory:');
    migrate(db);
    repos = createSqliteRepositories(db, new GroupCommitExecutor(db));
    db.exec(`
      INSERT INTO orgs (id, name, created_at) VALUES ('o', 'o', '${AT}');
      INSERT INTO applications (id, org_id, slug, update_workflow_name, created_at)
        VALUES ('app', 'o', 'app', 'apply-update', '${AT}');
      WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${count})
      INSERT INTO agents (id, org_id, name, hostname, os, agent_version, public_key, status, enrolled_at, seq)
        SELECT 'agent-' || i, 'o', 'a' || i, 'h', 'linux', '1', 'k', 'connected', '${AT}', i FROM n;
      WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${count})
      INSERT INTO jobs (id, org_id, kind, source, agent_id, workflow_name, status, created_at, number)
        SELECT 'job-' || printf('%06d', i), 'o', 'update', 'ota', 'agent-' || i, 'apply-update', 'pending', '${AT}', i
        FROM n;
      WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${count})
      INSERT INTO device_bindings (id, org_id, application_id, agent_id, channel, active_job_id, created_at)
        SELECT 'binding-' || i, 'o', 'app', 'agent-' || i, 'stable', 'job-' || printf('%06d', i), '${AT}' FROM n;
    `);
  });
  afterEach(() => db.close());

  it('finds an ended job past the first window at the next sweep, and starts again from the first after the last', async () => {
    db.prepare("UPDATE jobs SET status = 'failed', finished_at = ? WHERE id = ?").run(AT, jobId(count));
    db.prepare("UPDATE jobs SET status = 'success', finished_at = ? WHERE id = ?").run(AT, jobId(1));
    expect(await repos.deviceBindings.idsDue(AT, 1000)).toEqual(['binding-1']);
    expect(await repos.deviceBindings.idsDue(AT, 1000)).toEqual([`binding-${count}`]);
    expect(await repos.deviceBindings.idsDue(AT, 1000)).toEqual(['binding-1']);
  });

  it('leaves the ended jobs past its limit to the next sweep', async () => {
    db.prepare("UPDATE jobs SET status = 'failed', finished_at = ? WHERE id IN (?, ?, ?)").run(
      AT,
      jobId(3),
      jobId(5),
      jobId(7),
    );
    expect(await repos.deviceBindings.idsDue(AT, 2)).toEqual(['binding-3', 'binding-5']);
    expect(await repos.deviceBindings.idsDue(AT, 2)).toEqual(['binding-7']);
  });
});

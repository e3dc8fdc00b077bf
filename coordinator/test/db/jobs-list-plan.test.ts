import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase, type Db } from '../../src/db/database.js';
import { migrate } from '../../src/db/migrate.js';
import { createSqliteRepositories } from '../../src/sqlite-repositories.js';
import type { Repositories } from '../../src/domain/model/repositories.js';
import { postgresPlanDatabase, recordSqlitePlans } from './statement-plans.js';

const AT = '2030-01-01T00:00:00.000Z';

/**
 * The plans of the statements the jobs list runs (GET /v1/orgs/:orgId/jobs), for the parameters
 * the repository gave them (statement-plans.ts).
 */
describe('jobs list plans (SQLite)', () => {
  let db: Db;
  let repos: Repositories;
  let planOfList: () => string;

  beforeEach(() => {
    db = openDatabase(':memory:');
    migrate(db);
    db.prepare("INSERT INTO orgs (id, name, created_at) VALUES ('o', 'o', ?)").run(AT);
    db.prepare(
      `INSERT INTO agents (id, org_id, name, hostname, os, agent_version, public_key, status, enrolled_at, seq)
       VALUES ('a', 'o', 'a', 'h', 'linux', '1', 'k', 'connected', ?, 1)`,
    ).run(AT);
    // A history of ended webhook calls, and one queued job from Discord among the oldest.
    const insert = db.prepare(
      `INSERT INTO jobs (id, org_id, kind, source, trigger_id, agent_id, workflow_name, status, created_at, number)
       VALUES (?, 'o', 'trigger', ?, 't', 'a', 'w', ?, ?, ?)`,
    );
    db.transaction(() => {
      for (let i = 1; i <= 2000; i++) {
        insert.run(`j${i}`, i === 3 ? 'discord' : 'webhook', i === 3 ? 'queued' : 'success', AT, i);
      }
    })();
    // No ANALYZE: the coordinator never runs it, so its planner has no statistics either.
    const plans = recordSqlitePlans(db);
    planOfList = () => plans.planOf(/^SELECT \* FROM jobs WHERE/);
    repos = createSqliteRepositories(db);
  });
  afterEach(() => db.close());

  it('reads the jobs of a status from their index, not the whole history (0049)', async () => {
    const jobs = await repos.jobs.listTriggerJobs('o', { status: 'queued', limit: 51 });
    expect(jobs.map((j) => j.id)).toEqual(['j3']);
    expect(planOfList()).toContain('USING INDEX jobs_org_status (org_id=? AND status=? AND seq>? AND seq<?)');
  });

  it('reads the jobs of a source from their index, not the whole history (0049)', async () => {
    const jobs = await repos.jobs.listTriggerJobs('o', { source: 'discord', limit: 51 });
    expect(jobs.map((j) => j.id)).toEqual(['j3']);
    expect(planOfList()).toContain('USING INDEX jobs_org_source (org_id=? AND source=? AND seq>? AND seq<?)');
  });

  it('keeps the status index for a status with a page cursor and a source', async () => {
    const jobs = await repos.jobs.listTriggerJobs('o', {
      status: 'success',
      source: 'webhook',
      limit: 2,
      beforeSeq: 10,
    });
    expect(jobs.map((j) => j.id)).toEqual(['j9', 'j8']);
    expect(planOfList()).toContain('USING INDEX jobs_org_status');
  });

  it('leaves a trigger to lead with its own index', async () => {
    await repos.jobs.listTriggerJobs('o', { status: 'queued', triggerId: 't', limit: 51 });
    expect(planOfList()).toContain('USING INDEX jobs_org_trigger');
  });
});

describe('jobs list plans (PostgreSQL)', () => {
  const db = postgresPlanDatabase(async (pool) => {
    await pool.query(`INSERT INTO orgs (id, name, created_at) VALUES ('o', 'o', $1)`, [AT]);
    await pool.query(
      `INSERT INTO agents (id, org_id, name, hostname, os, agent_version, public_key, status, enrolled_at)
       VALUES ('a', 'o', 'a', 'h', 'linux', '1', 'k', 'connected', $1)`,
      [AT],
    );
    // 20,000 ended webhook calls, one rejected from Discord among the oldest, the statistics read
    // (autovacuum's ANALYZE).
    // Open jobs are found through jobs_agent_open already (its status column); an ended status was
    // looked for in every job.
    await pool.query(
      `INSERT INTO jobs (id, org_id, kind, source, trigger_id, agent_id, workflow_name, status, created_at, number)
       SELECT 'j' || i, 'o', 'trigger', CASE WHEN i = 3 THEN 'discord' ELSE 'webhook' END, 't', 'a', 'w',
         CASE WHEN i = 3 THEN 'rejected' ELSE 'success' END, $1, i
       FROM generate_series(1, 20000) AS i`,
      [AT],
    );
    await pool.query('ANALYZE jobs');
  });

  const planOfList = () => db.plans().planOf(/^SELECT \* FROM jobs WHERE/);

  it('reads the jobs of a status from their index, not the whole history (0032)', async () => {
    db.plans().reset();
    const jobs = await db.repos().jobs.listTriggerJobs('o', { status: 'rejected', limit: 51 });
    expect(jobs.map((j) => j.id)).toEqual(['j3']);
    expect(await planOfList()).toMatch(/Index Scan using jobs_org_status on jobs/);
  });

  it('reads the jobs of a source from their index, not the whole history (0032)', async () => {
    db.plans().reset();
    const jobs = await db.repos().jobs.listTriggerJobs('o', { source: 'discord', limit: 51 });
    expect(jobs.map((j) => j.id)).toEqual(['j3']);
    expect(await planOfList()).toMatch(/Index Scan using jobs_org_source on jobs/);
  });
});

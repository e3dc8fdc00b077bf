import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase, type Db } from '../../../src/db/database.js';
import { migrate } from '../../../src/db/migrate.js';
import { BatchService, type BatchServiceDeps } from '../../../src/domain/fleet/batch-service.js';
import { createSqliteRepositories } from '../../../src/sqlite-repositories.js';

const AT = '2030-01-01T00:00:00.000Z';

/**
 * A batch's view (GET /v1/orgs/:orgId/batches/:id, which the batch's page polls) names its jobs'
 * agents from the agents of the batch, not from every agent of the organization.
 */
describe("a batch's jobs view", () => {
  let db: Db;
  let agentRowsRead: number;

  beforeEach(() => {
    db = openDatabase(':memory:');
    migrate(db);
    db.prepare("INSERT INTO orgs (id, name, created_at) VALUES ('o', 'o', ?)").run(AT);
    const agent = db.prepare(
      `INSERT INTO agents (id, org_id, name, hostname, os, agent_version, public_key, status, enrolled_at, seq)
       VALUES (?, 'o', ?, 'h', 'linux', '1', ?, 'connected', ?, ?)`,
    );
    // A fleet of 200 agents; the batch ran on two of them (and one job found no agent).
    for (let i = 1; i <= 200; i++) agent.run(`a${i}`, `gw-${i}`, `k${i}`, AT, i);
    db.prepare(
      `INSERT INTO batches (id, org_id, number, trigger_id, workflow_name, selector, source, job_count, created_at)
       VALUES ('b', 'o', 1, 't', 'w', 'role=gw', 'webhook', 3, ?)`,
    ).run(AT);
    const job = db.prepare(
      `INSERT INTO jobs (id, org_id, kind, source, trigger_id, agent_id, workflow_name, status, created_at, number, batch_id)
       VALUES (?, 'o', 'trigger', 'webhook', 't', ?, 'w', ?, ?, ?, 'b')`,
    );
    job.run('j1', 'a7', 'pending', AT, 1);
    job.run('j2', 'a150', 'success', AT, 2);
    job.run('j3', null, 'rejected', AT, 3);
    agentRowsRead = 0;
    const prepare = db.prepare.bind(db);
    db.prepare = ((sql: string) => {
      const statement = prepare(sql);
      if (!/\bFROM agents\b/.test(sql)) return statement;
      const all = statement.all.bind(statement);
      return Object.assign(statement, {
        all: (...params: unknown[]) => {
          const rows = all(...params);
          agentRowsRead += rows.length;
          return rows;
        },
      });
    }) as Db['prepare'];
  });
  afterEach(() => db.close());

  it("reads only the rows of the batch's agents", async () => {
    const repos = createSqliteRepositories(db);
    // Only the repositories are used by the view.
    const service = new BatchService({ repos } as unknown as BatchServiceDeps);
    const jobs = await service.jobViews('o', 'b');
    expect(jobs.map((j) => [j.jobId, j.agentId, j.agentName])).toEqual([
      ['j1', 'a7', 'gw-7'],
      ['j2', 'a150', 'gw-150'],
      ['j3', null, null],
    ]);
    expect(agentRowsRead).toBe(2);
  });
});

import { describe, expect, it } from 'vitest';
import { openDatabase, type Db } from '../../src/db/database.js';
import { loadMigrations, migrate } from '../../src/db/migrate.js';
import { newId } from '../../src/util/ids.js';
import { insertJobRow } from './fixture.js';

const AT = '2030-01-01T00:00:00.000Z';

/** An organization with one agent, written with SQL (works at any schema version since 0003). */
function org(db: Db, name: string): { orgId: string; agentId: string } {
  const orgId = newId();
  const agentId = newId();
  db.prepare('INSERT INTO orgs (id, name, created_at) VALUES (?, ?, ?)').run(orgId, name, AT);
  db.prepare(
    `INSERT INTO agents (id, org_id, name, hostname, os, agent_version, public_key, status, enrolled_at, seq)
     VALUES (?, ?, 'a', 'h', 'linux', '1', ?, 'connected', ?, (SELECT IFNULL(MAX(seq), 0) + 1 FROM agents))`,
  ).run(agentId, orgId, newId(), AT);
  return { orgId, agentId };
}

const numbers = (db: Db, orgId: string) =>
  db.prepare('SELECT number FROM jobs WHERE org_id = ? ORDER BY seq').pluck().all(orgId);

/** Numbering new jobs is in the contract suite (contract/job-cancel.test.ts); here, SQLite's migration 0015. */
describe('job numbers', () => {
  it('numbers the jobs made before the migration in their creation order, per organization', () => {
    const db = openDatabase(':memory:');
    const all = loadMigrations();
    migrate(
      db,
      all.filter((m) => m.version < 15),
    );
    const a = org(db, 'a');
    const b = org(db, 'b');
    const oldInsert = db.prepare(
      `INSERT INTO jobs (id, org_id, kind, source, trigger_id, agent_id, workflow_name, status, params, created_at)
       VALUES (?, ?, 'trigger', 'webhook', 't', ?, 'w', 'success', '{}', ?)`,
    );
    for (const owner of [a, b, a, a, b]) oldInsert.run(newId(), owner.orgId, owner.agentId, AT);
    migrate(db, all);
    expect(numbers(db, a.orgId)).toEqual([1, 2, 3]);
    expect(numbers(db, b.orgId)).toEqual([1, 2]);
    // New jobs go on from there.
    insertJobRow(db, b, { createdAt: AT, timeoutMs: null });
    expect(numbers(db, b.orgId)).toEqual([1, 2, 3]);
    db.close();
  });
});

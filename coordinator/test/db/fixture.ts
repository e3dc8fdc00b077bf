import type { Db } from '../../src/db/database.js';
import type { Repositories } from '../../src/db/repositories/index.js';
import { newId } from '../../src/util/ids.js';

const CREATED_AT = '2030-01-01T00:00:00.000Z';

/** Seeds a migrated database with one user, one organization it owns, and one connected agent in it. */
export async function seedOrgWithAgent(db: Db, repos: Repositories): Promise<{ orgId: string; agentId: string }> {
  const userId = newId();
  await repos.users.insert({ id: userId, email: 'u@example.test', passwordHash: 'x', createdAt: CREATED_AT });
  const orgId = newId();
  await repos.orgs.create({ id: orgId, name: 'acme', createdAt: CREATED_AT }, userId);
  const agentId = newId();
  db.prepare(
    `INSERT INTO agents (id, org_id, name, hostname, os, agent_version, public_key, status, enrolled_at, seq)
     VALUES (?, ?, 'a', 'h', 'linux', '1', 'k', 'connected', ?, 1)`,
  ).run(agentId, orgId, CREATED_AT);
  return { orgId, agentId };
}

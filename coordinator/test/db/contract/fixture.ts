import type { NewJob } from '../../../src/domain/model/jobs.js';
import { newId } from '../../../src/util/ids.js';
import { testJob } from '../fixture.js';
import type { ContractRepositories, DatabaseUnderTest } from './databases.js';

/** An organization (owned by a new user) with one agent, enrolled through the repositories and connected. */
export async function orgWithAgent(
  repos: ContractRepositories,
  at: string,
): Promise<{ orgId: string; agentId: string; userId: string }> {
  const userId = newId();
  await repos.users.insert({ id: userId, email: `${userId}@example.test`, passwordHash: 'x', createdAt: at });
  const orgId = newId();
  await repos.orgs.create({ id: orgId, name: 'acme', createdAt: at }, userId);
  const agentId = await enroll(repos, orgId, at);
  await repos.agents.markConnected(agentId, at);
  return { orgId, agentId, userId };
}

/** Enrolls one more agent in the organization (an unexpiring token, then `enroll`); returns its id. */
export async function enroll(repos: ContractRepositories, orgId: string, at: string): Promise<string> {
  const tokenHash = newId();
  await repos.enrollmentTokens.insert(
    {
      id: newId(),
      orgId,
      name: null,
      expiresAt: '2099-01-01T00:00:00.000Z',
      usedAt: null,
      usedByAgentId: null,
      createdBy: null,
      createdAt: at,
    },
    tokenHash,
  );
  const id = newId();
  const outcome = await repos.agents.enroll(
    tokenHash,
    { id, name: 'a', hostname: 'h', os: 'linux', agentVersion: '1', publicKey: `k-${id}` },
    at,
  );
  if (!outcome.ok) throw new Error(`enroll agent: ${outcome.reason}`);
  return id;
}

/** Stores `testJob(owner, fields)` (../fixture.ts) through the database under test and returns it. */
export async function insertJob(
  t: DatabaseUnderTest,
  owner: { orgId: string; agentId: string },
  fields: Partial<NewJob> & Pick<NewJob, 'createdAt' | 'timeoutMs'>,
): Promise<NewJob> {
  const job = testJob(owner, fields);
  await t.insertJob(job);
  return job;
}

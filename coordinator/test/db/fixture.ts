import type { Db } from '../../src/db/database.js';
import { INSERT_JOB, newJobParams } from '../../src/db/repositories/job-rows.js';
import { SQLITE } from '../../src/db/sql/dialect.js';
import type { NewAgent } from '../../src/domain/model/agents.js';
import type { NewJob } from '../../src/domain/model/jobs.js';
import type { Repositories } from '../../src/domain/model/repositories.js';
import type { Trigger } from '../../src/domain/model/triggers.js';
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

/**
 * Enrolls an agent through the repositories (an unexpiring enrollment token, then `enroll`), as
 * `a` on host `h` unless told otherwise. Returns its id.
 */
export async function enrollAgent(
  repos: Repositories,
  orgId: string,
  at: string,
  agent: Partial<Omit<NewAgent, 'id'>> = {},
): Promise<string> {
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
    { id, name: 'a', hostname: 'h', os: 'linux', agentVersion: '1', publicKey: `k-${id}`, ...agent },
    at,
  );
  if (!outcome.ok) throw new Error(`enroll agent: ${outcome.reason}`);
  return id;
}

/**
 * A stored trigger: an async webhook named `t` with every option at its default (no allowed refs,
 * no debug, no notification, no cron, no chat), scoped to the whole agent unless `fields` say
 * otherwise.
 */
export function triggerRow(fields: Pick<Trigger, 'id' | 'orgId' | 'agentId'> & Partial<Trigger>): Trigger {
  return {
    name: 't',
    type: 'webhook',
    agentSelector: null,
    fanout: null,
    maxParallel: null,
    scopeType: 'agent',
    workflowName: null,
    responseMode: 'async',
    responseTimeoutMs: 30_000,
    allowedRefs: null,
    allowDebug: false,
    notifyProvider: null,
    notifyTeamId: null,
    notifyChannelId: null,
    notifyOn: 'none',
    cronExpression: null,
    cronTimezone: null,
    cronEnabled: null,
    cronMissedPolicy: null,
    cronOverlapPolicy: null,
    params: null,
    ref: null,
    cronSince: null,
    chatTeamId: null,
    chatChannelId: null,
    chatKeyword: null,
    chatAllowedUserIds: null,
    createdBy: null,
    createdAt: CREATED_AT,
    updatedAt: CREATED_AT,
    ...fields,
  };
}

/**
 * A job as the admission would make it (a pending trigger job of `deploy` by default; update jobs
 * get the `ota` source). `fields` override any default.
 */
export function testJob(
  owner: { orgId: string; agentId: string },
  fields: Partial<NewJob> & Pick<NewJob, 'createdAt' | 'timeoutMs'>,
): NewJob {
  return {
    id: newId(),
    orgId: owner.orgId,
    kind: 'trigger',
    source: fields.kind === 'update' ? 'ota' : 'webhook',
    triggerId: 'trigger-1',
    agentId: owner.agentId,
    workflowId: null,
    workflowName: 'deploy',
    status: 'pending',
    ref: null,
    debug: false,
    params: {},
    errorMessage: null,
    forced: false,
    forceReason: null,
    apiTokenId: null,
    userId: null,
    ...fields,
  };
}

/** Inserts `testJob(owner, fields)` as a row and returns it. */
export function insertJobRow(
  db: Db,
  owner: { orgId: string; agentId: string },
  fields: Partial<NewJob> & Pick<NewJob, 'createdAt' | 'timeoutMs'>,
): NewJob {
  const job = testJob(owner, fields);
  db.prepare(INSERT_JOB.compiled(SQLITE).text).run(newJobParams(job));
  return job;
}

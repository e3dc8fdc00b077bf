import type { Db } from '../database.js';
import { WriteBatcher } from '../write-batcher.js';
import { createAgentRepository, type AgentRepository } from './agents.js';
import { createApiTokenRepository, type ApiTokenRepository } from './api-tokens.js';
import { createAuditRepository, type AuditRepository } from './audit.js';
import { createChangeCounterRepository, type ChangeCounterRepository } from './change-counter.js';
import { createEnrollmentTokenRepository, type EnrollmentTokenRepository } from './enrollment-tokens.js';
import { createJobRepository, type JobRepository } from './jobs.js';
import { createOrgRepository, type OrgRepository } from './orgs.js';
import { createServerSecretRepository, type ServerSecretRepository } from './server-secrets.js';
import { createStorageBindingRepository, type StorageBindingRepository } from './storage-bindings.js';
import { createTriggerRepository, type TriggerRepository } from './triggers.js';
import { createTriggerRunRepository, type TriggerRunRepository } from './trigger-runs.js';
import { createUserRepository, type UserRepository } from './users.js';
import { createWorkflowRepository, type WorkflowRepository } from './workflows.js';

/**
 * The persistence seam: every query the coordinator makes goes through these interfaces, whose
 * methods are async and each atomic (a multi-row change is one method, one transaction), so a
 * second database can implement them without touching the domain or the routes.
 */
export interface Repositories {
  agents: AgentRepository;
  apiTokens: ApiTokenRepository;
  audit: AuditRepository;
  changeCounter: ChangeCounterRepository;
  enrollmentTokens: EnrollmentTokenRepository;
  jobs: JobRepository;
  orgs: OrgRepository;
  serverSecrets: ServerSecretRepository;
  storageBindings: StorageBindingRepository;
  triggers: TriggerRepository;
  triggerRuns: TriggerRunRepository;
  users: UserRepository;
  workflows: WorkflowRepository;
}

/** `writes` group-commits the hot write paths (trigger runs, job reports); see write-batcher.ts. */
export function createSqliteRepositories(db: Db, writes: WriteBatcher = new WriteBatcher(db)): Repositories {
  void writes;
  return {
    agents: createAgentRepository(db),
    apiTokens: createApiTokenRepository(db),
    audit: createAuditRepository(db),
    changeCounter: createChangeCounterRepository(db),
    enrollmentTokens: createEnrollmentTokenRepository(db),
    jobs: createJobRepository(db, writes),
    orgs: createOrgRepository(db),
    serverSecrets: createServerSecretRepository(db),
    storageBindings: createStorageBindingRepository(db),
    triggers: createTriggerRepository(db),
    triggerRuns: createTriggerRunRepository(db, writes),
    users: createUserRepository(db),
    workflows: createWorkflowRepository(db),
  };
}

import type { Db } from '../database.js';
import { GroupCommitExecutor, type WriteExecutor } from '../writer/executor.js';
import { createAgentRepository, type AgentRepository } from './agents.js';
import { createApplicationRepository, type ApplicationRepository } from './applications.js';
import { createDeviceBindingRepository, type DeviceBindingRepository } from './device-bindings.js';
import { createReleaseRepository, type ReleaseRepository } from './releases.js';
import { createApiTokenRepository, type ApiTokenRepository } from './api-tokens.js';
import { createAuditRepository, type AuditRepository } from './audit.js';
import { createChangeCounterRepository, type ChangeCounterRepository } from './change-counter.js';
import { createEnrollmentTokenRepository, type EnrollmentTokenRepository } from './enrollment-tokens.js';
import { createJobRepository, type JobRepository } from './jobs.js';
import { createOrgRepository, type OrgRepository } from './orgs.js';
import { createServerSecretRepository, type ServerSecretRepository } from './server-secrets.js';
import { createStorageBindingRepository, type StorageBindingRepository } from './storage-bindings.js';
import { createFileRepository, type FileRepository } from './files.js';
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
  files: FileRepository;
  triggers: TriggerRepository;
  triggerRuns: TriggerRunRepository;
  users: UserRepository;
  workflows: WorkflowRepository;
  applications: ApplicationRepository;
  releases: ReleaseRepository;
  deviceBindings: DeviceBindingRepository;
}

/**
 * `writes` runs the hot writes (trigger-run admissions, job reports, audit entries, request
 * nonces) with group commit; see db/writer/. Reads and the other writes use `db` directly.
 */
export function createSqliteRepositories(db: Db, writes: WriteExecutor = new GroupCommitExecutor(db)): Repositories {
  return {
    agents: createAgentRepository(db, writes),
    apiTokens: createApiTokenRepository(db),
    audit: createAuditRepository(db, writes),
    changeCounter: createChangeCounterRepository(db),
    enrollmentTokens: createEnrollmentTokenRepository(db),
    jobs: createJobRepository(db, writes),
    orgs: createOrgRepository(db),
    serverSecrets: createServerSecretRepository(db),
    storageBindings: createStorageBindingRepository(db),
    files: createFileRepository(db),
    triggers: createTriggerRepository(db),
    triggerRuns: createTriggerRunRepository(db, writes),
    users: createUserRepository(db),
    workflows: createWorkflowRepository(db),
    applications: createApplicationRepository(db),
    releases: createReleaseRepository(db),
    deviceBindings: createDeviceBindingRepository(db),
  };
}

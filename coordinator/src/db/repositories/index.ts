import type { Repositories } from '../../domain/model/repositories.js';
import type { TransactionRules } from '../../domain/model/transaction-rules.js';
import type { Database } from '../sql/index.js';
import { createAgentRepository } from './agents.js';
import { createApplicationRepository } from './applications.js';
import { createDeviceBindingRepository } from './device-bindings.js';
import { createDeviceGroupRepository } from './device-groups.js';
import { createReleaseRepository } from './releases.js';
import { createRolloutRepository } from './rollouts.js';
import { createRetentionRepository } from './retention.js';
import { createApiTokenRepository } from './api-tokens.js';
import { createAuditRepository } from './audit.js';
import { createBatchRepository } from './batches.js';
import { createChangeCounterRepository, type Reading } from './change-counter.js';
import { createChatIntegrationRepository } from './chat-integrations.js';
import { createOidcStateRepository } from './oidc-states.js';
import { createDeviceSignInRepository } from './device-sign-ins.js';
import { createChatOutboxRepository } from './chat-outbox.js';
import { createChatRequestRepository } from './chat-requests.js';
import { createCronOccurrenceRepository } from './cron-occurrences.js';
import { createEnrollmentTokenRepository } from './enrollment-tokens.js';
import { createJobRepository } from './jobs.js';
import { createOrgRepository } from './orgs.js';
import { createPoolRepository } from './pools.js';
import { createServerSecretRepository } from './server-secrets.js';
import { createSignedOutSessionRepository } from './signed-out-sessions.js';
import { createStorageBindingRepository } from './storage-bindings.js';
import { createFileRepository } from './files.js';
import { createInvitationRepository } from './invitations.js';
import { createTriggerRepository } from './triggers.js';
import { createTriggerRunRepository } from './trigger-runs.js';
import { createUserRepository } from './users.js';
import { createWorkflowRepository } from './workflows.js';

/** What one database does differently in a repository's wiring. */
export interface RepositoryOptions {
  /** How a read of the change counter is kept (SQLite: for the event-loop turn, db/repositories/change-counter.ts). */
  keepGeneration?: (read: Reading) => Reading;
}

/**
 * The repositories, on either database: every one is written once (db/repositories/, over
 * db/sql/). On SQLite `database` runs the hot writes (trigger-run admissions, job reports, audit
 * entries, request nonces) in the group commit of its writer (db/writer/); on PostgreSQL each
 * method is one statement or one transaction of the pool, which commits concurrent transactions
 * together itself. `rules` are the domain's decisions that run inside a repository's write
 * (coordinator/src/sqlite-repositories.ts and postgres-repositories.ts wire them).
 */
export function createRepositories(
  database: Database,
  rules: TransactionRules,
  options: RepositoryOptions = {},
): Repositories {
  return {
    agents: createAgentRepository(database, rules.enrollmentTokenRefusal),
    apiTokens: createApiTokenRepository(database),
    audit: createAuditRepository(database),
    batches: createBatchRepository(database, rules.decideLimits, rules.planBatchMessages),
    changeCounter: createChangeCounterRepository(database, options.keepGeneration),
    chatIntegrations: createChatIntegrationRepository(database),
    chatOutbox: createChatOutboxRepository(database),
    chatRequests: createChatRequestRepository(database),
    cronOccurrences: createCronOccurrenceRepository(database),
    enrollmentTokens: createEnrollmentTokenRepository(database),
    oidcStates: createOidcStateRepository(database),
    deviceSignIns: createDeviceSignInRepository(database),
    jobs: createJobRepository(database, rules.planJobMove, rules.planJobMessages),
    orgs: createOrgRepository(database, rules.roleChangeRefusal),
    pools: createPoolRepository(database),
    serverSecrets: createServerSecretRepository(database),
    signedOutSessions: createSignedOutSessionRepository(database),
    storageBindings: createStorageBindingRepository(database),
    files: createFileRepository(database),
    invitations: createInvitationRepository(database),
    triggers: createTriggerRepository(database, rules.triggerLimitRefusal),
    triggerRuns: createTriggerRunRepository(database, rules.decideLimits, rules.planJobMessages, rules.choosePoolAgent),
    users: createUserRepository(database),
    workflows: createWorkflowRepository(database),
    applications: createApplicationRepository(database),
    releases: createReleaseRepository(database, rules.checkArtifact, rules.checkReleaseSignature),
    rollouts: createRolloutRepository(database),
    retention: createRetentionRepository(database),
    deviceBindings: createDeviceBindingRepository(database, rules.evaluateBinding),
    deviceGroups: createDeviceGroupRepository(database, rules.planDeviceGroup),
  };
}

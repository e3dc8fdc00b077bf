import type { Repositories } from '../../../domain/model/repositories.js';
import type { TransactionRules } from '../../../domain/model/transaction-rules.js';
import type { PgPool } from '../pool.js';
import { createAgentRepository } from '../../repositories/agents.js';
import { createApiTokenRepository } from '../../repositories/api-tokens.js';
import { createSignedOutSessionRepository } from '../../repositories/signed-out-sessions.js';
import { createServerSecretRepository } from '../../repositories/server-secrets.js';
import { createChatRequestRepository } from '../../repositories/chat-requests.js';
import { createEnrollmentTokenRepository } from '../../repositories/enrollment-tokens.js';
import { createCronOccurrenceRepository } from '../../repositories/cron-occurrences.js';
import { createJobRepository } from '../../repositories/jobs.js';
import { createTriggerRunRepository } from '../../repositories/trigger-runs.js';
import { createTriggerRepository } from '../../repositories/triggers.js';
import { createWorkflowRepository } from '../../repositories/workflows.js';
import { createFileRepository } from '../../repositories/files.js';
import { createStorageBindingRepository } from '../../repositories/storage-bindings.js';
import { createAuditRepository } from '../../repositories/audit.js';
import { createChangeCounterRepository } from '../../repositories/change-counter.js';
import { createChatIntegrationRepository } from '../../repositories/chat-integrations.js';
import { createChatOutboxRepository } from '../../repositories/chat-outbox.js';
import { createApplicationRepository } from '../../repositories/applications.js';
import { createReleaseRepository } from '../../repositories/releases.js';
import { createDeviceBindingRepository } from '../../repositories/device-bindings.js';
import { PostgresDatabase } from '../../sql/postgres.js';
import { createInvitationRepository } from '../../repositories/invitations.js';
import { createOrgRepository } from '../../repositories/orgs.js';
import { createUserRepository } from '../../repositories/users.js';

/**
 * The PostgreSQL implementation of the repositories, on a pool shared by all of them. Each
 * method is one statement or one transaction (db/postgres/transaction.ts); there is no group
 * commit, since PostgreSQL commits concurrent transactions together itself. `rules` are the
 * domain's decisions that run inside a repository's write (coordinator/src/postgres-repositories.ts
 * wires them).
 */
export function createRepositories(pool: PgPool, rules: TransactionRules): Repositories {
  // Every repository is written once for both databases (db/repositories/, over db/sql/) and takes this.
  const database = new PostgresDatabase(pool);
  return {
    agents: createAgentRepository(database, rules.enrollmentTokenRefusal),
    apiTokens: createApiTokenRepository(database),
    audit: createAuditRepository(database),
    changeCounter: createChangeCounterRepository(database),
    chatIntegrations: createChatIntegrationRepository(database),
    chatOutbox: createChatOutboxRepository(database),
    chatRequests: createChatRequestRepository(database),
    cronOccurrences: createCronOccurrenceRepository(database),
    enrollmentTokens: createEnrollmentTokenRepository(database),
    jobs: createJobRepository(database, rules.planJobMove, rules.planJobMessages),
    orgs: createOrgRepository(database, rules.roleChangeRefusal),
    serverSecrets: createServerSecretRepository(database),
    signedOutSessions: createSignedOutSessionRepository(database),
    storageBindings: createStorageBindingRepository(database),
    triggerRuns: createTriggerRunRepository(database, rules.decideLimits, rules.planJobMessages),
    triggers: createTriggerRepository(database, rules.triggerLimitRefusal),
    users: createUserRepository(database),
    workflows: createWorkflowRepository(database),
    files: createFileRepository(database),
    invitations: createInvitationRepository(database),
    applications: createApplicationRepository(database),
    releases: createReleaseRepository(database, rules.checkArtifact),
    deviceBindings: createDeviceBindingRepository(database, rules.evaluateBinding),
  };
}

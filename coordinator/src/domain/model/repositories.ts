import type { AgentRepository } from './agents.js';
import type { OidcStateRepository } from './oidc-states.js';
import type { ApiTokenRepository } from './api-tokens.js';
import type { ApplicationRepository } from './applications.js';
import type { AuditRepository } from './audit.js';
import type { BatchRepository } from './batches.js';
import type { PoolRepository } from './pools.js';
import type { ChangeCounterRepository } from './change-counter.js';
import type { ChatIntegrationRepository } from './chat-integrations.js';
import type { ChatOutboxRepository } from './chat-outbox.js';
import type { ChatRequestRepository } from './chat-requests.js';
import type { CronOccurrenceRepository } from './cron-occurrences.js';
import type { DeviceBindingRepository } from './device-bindings.js';
import type { DeviceGroupRepository } from './device-groups.js';
import type { DeviceSignInRepository } from './device-sign-ins.js';
import type { EnrollmentTokenRepository } from './enrollment-tokens.js';
import type { FileRepository } from './files.js';
import type { InvitationRepository } from './invitations.js';
import type { JobRepository } from './jobs.js';
import type { OrgRepository } from './orgs.js';
import type { ReleaseRepository } from './releases.js';
import type { RetentionRepository } from './retention.js';
import type { RolloutRepository } from './rollouts.js';
import type { ServerSecretRepository } from './server-secrets.js';
import type { SignedOutSessionRepository } from './signed-out-sessions.js';
import type { StorageBindingRepository } from './storage-bindings.js';
import type { TriggerRunRepository } from './trigger-runs.js';
import type { TriggerRepository } from './triggers.js';
import type { UserRepository } from './users.js';
import type { WorkflowRepository } from './workflows.js';

/**
 * The persistence seam: every query the coordinator makes goes through these interfaces, whose
 * methods are async and each atomic (a multi-row change is one method, one transaction), so a
 * second database can implement them without touching the domain or the routes. The SQLite
 * implementation is in db/repositories/.
 */
export interface Repositories {
  agents: AgentRepository;
  apiTokens: ApiTokenRepository;
  audit: AuditRepository;
  batches: BatchRepository;
  pools: PoolRepository;
  changeCounter: ChangeCounterRepository;
  chatIntegrations: ChatIntegrationRepository;
  chatOutbox: ChatOutboxRepository;
  chatRequests: ChatRequestRepository;
  cronOccurrences: CronOccurrenceRepository;
  deviceSignIns: DeviceSignInRepository;
  enrollmentTokens: EnrollmentTokenRepository;
  jobs: JobRepository;
  oidcStates: OidcStateRepository;
  orgs: OrgRepository;
  serverSecrets: ServerSecretRepository;
  signedOutSessions: SignedOutSessionRepository;
  storageBindings: StorageBindingRepository;
  files: FileRepository;
  invitations: InvitationRepository;
  triggers: TriggerRepository;
  triggerRuns: TriggerRunRepository;
  users: UserRepository;
  workflows: WorkflowRepository;
  applications: ApplicationRepository;
  releases: ReleaseRepository;
  rollouts: RolloutRepository;
  retention: RetentionRepository;
  deviceBindings: DeviceBindingRepository;
  deviceGroups: DeviceGroupRepository;
}

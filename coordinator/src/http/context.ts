import type { RolloutService } from '../domain/ota/rollouts.js';
import type { OidcSignInService } from '../domain/auth/oidc-sign-in.js';
import type { RetentionService } from '../domain/retention/retention-service.js';
import type { OverviewService } from '../domain/overview/overview-service.js';
import type { Config } from '../config/config.js';
import type { Repositories } from '../domain/model/repositories.js';
import type { AuditLog } from '../domain/audit/audit-log.js';
import type { FileService } from '../domain/files/file-service.js';
import type { JobCancelService } from '../domain/jobs/job-cancel.js';
import type { BatchService } from '../domain/fleet/batch-service.js';
import type { PoolService } from '../domain/fleet/pool-service.js';
import type { JobEvents } from '../domain/jobs/job-events.js';
import type { JobLogService } from '../domain/jobs/job-logs.js';
import type { Metrics } from '../domain/metrics.js';
import type { HttpMetrics } from './http-metrics.js';
import type { OtaEngine } from '../domain/ota/engine.js';
import type { DeviceGroupService } from '../domain/ota/device-groups.js';
import type { ReadRateLimiter } from '../domain/discovery/read-rate-limiter.js';
import type { ServerKey } from '../domain/secrets/server-key.js';
import type { AgentEnrollment } from '../domain/agents/agent-enrollment.js';
import type { ChatIntegrationService } from '../domain/chat/integrations.js';
import type { ChatRunService } from '../domain/chat/chat-runs.js';
import type { ChatReplayGuard } from '../domain/chat/replays.js';
import type { SessionService } from '../domain/auth/sessions.js';
import type { SignInService } from '../domain/auth/sign-in.js';
import type { AccountService } from '../domain/auth/account.js';
import type { ApiTokenService } from '../domain/tokens/api-token-service.js';
import type { EnrollmentTokenService } from '../domain/agents/enrollment-tokens.js';
import type { MemberService } from '../domain/orgs/member-service.js';
import type { InvitationService } from '../domain/orgs/invitation-service.js';
import type { DeviceSignInService } from '../domain/auth/device-sign-in.js';
import type { TriggerService } from '../domain/triggers/trigger-service.js';
import type { TriggerRunService } from '../domain/trigger-run/run-trigger.js';
import type { Clock } from '../util/clock.js';
import type { HealthCheck } from '../health.js';
import type { ReconnectBudget } from '../domain/agents/reconnect-budget.js';
import type { AgentEvents } from '../domain/agents/agent-events.js';
import type { StreamRegistry } from '../domain/agents/stream-registry.js';

/** Everything a route needs, built once per coordinator and reachable as `app.ctx`. */
export interface AppContext {
  config: Config;
  repos: Repositories;
  clock: Clock;
  audit: AuditLog;
  sessions: SessionService;
  /** Dashboard sign-in with its throttles. */
  signIn: SignInService;
  /** Single sign-on with the operator's OpenID provider (docs/sso.md); null: not set up. */
  oidcSignIn: OidcSignInService | null;
  /** The command line signed in through the browser (`drover login --browser`). */
  deviceSignIn: DeviceSignInService;
  /** A signed-in user's password and sessions. */
  account: AccountService;
  /** Agent enrollment with its throttle. */
  enrollment: AgentEnrollment;
  /** Agent stream opens per second; the rest are shed with `Retry-After` (reconnect storms). */
  reconnects: ReconnectBudget;
  /** Revocations and stream openings of agents, here and (through the relay) on the other coordinators. */
  agentEvents: AgentEvents;
  /** The agents' open event streams on this coordinator: jobs, deploys and cancels pushed to them. */
  streams: StreamRegistry;
  serverKey: ServerKey;
  readLimiter: ReadRateLimiter;
  /** In-process job notifications: dispatch to connected agents, sync trigger-run waits. */
  jobEvents: JobEvents;
  /** Stored files: the public storage API, job input/output files, deletions (domain/files). */
  files: FileService;
  /** Triggers, API tokens and members of organizations, with their audit entries. */
  triggers: TriggerService;
  apiTokens: ApiTokenService;
  /** Enrollment tokens: issued, listed, revoked while unspent. */
  enrollmentTokens: EnrollmentTokenService;
  members: MemberService;
  invitations: InvitationService;
  /** Runs of triggers: the one way in for every source of runs. */
  runs: TriggerRunService;
  /** Cancelling jobs: the one way in for the dashboard and chat. */
  cancels: JobCancelService;
  /** Batches of runs on many agents: views, cancel, their course (domain/fleet). */
  batches: BatchService;
  /** Pools: jobs waiting for any one matching agent, taken as agents have room (domain/fleet). */
  pools: PoolService;
  /** Jobs' logs: the agents' batches within the cap, the job detail's pages. */
  jobLogs: JobLogService;
  /** Over-the-air deployment: evaluations of device bindings, update jobs, retries (domain/ota). */
  ota: OtaEngine;
  /** Staged rollouts of releases: publish with a plan, their waves, the operators' moves (domain/ota/rollouts.ts). */
  rollouts: RolloutService;
  /** What organizations keep and the sweep that deletes the rest (domain/retention/). */
  retention: RetentionService;
  /** The fleet at a glance: the home page's aggregate (domain/overview/). */
  overview: OverviewService;
  /** Device groups: applications' label selectors binding the agents they match (domain/ota/device-groups.ts). */
  deviceGroups: DeviceGroupService;
  /** Slack workspaces and Discord guilds connected to organizations (domain/chat). */
  chatIntegrations: ChatIntegrationService;
  /** Chat commands starting runs of chat triggers (domain/chat/chat-runs.ts). */
  chatRuns: ChatRunService;
  /** Signed chat requests received before: a replay is not acted on (domain/chat/replays.ts). */
  chatReplays: ChatReplayGuard;
  /** What the domain reports for the operators' figures (docs/metrics.md); measures nothing when metrics are off. */
  metrics: Metrics;
  /** The HTTP answers' figures and the `/metrics` text; null when metrics are off. */
  httpMetrics: HttpMetrics | null;
  /** Whether this coordinator can serve (`GET /healthz`). */
  health: HealthCheck;
}

declare module 'fastify' {
  interface FastifyInstance {
    ctx: AppContext;
  }
  interface FastifyRequest {
    /** The raw bytes of a JSON body, kept for agent signature verification. */
    rawBody: Buffer | undefined;
  }
}

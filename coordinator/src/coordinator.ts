import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { withListeningPort, type Config } from './config/config.js';
import { metricsEnabled } from './config/metrics-config.js';
import type { Db } from './db/database.js';
import { openStore } from './store.js';
import { HealthCheck } from './health.js';
import { AuditLog } from './domain/audit/audit-log.js';
import { JobCancelService } from './domain/jobs/job-cancel.js';
import { BatchService } from './domain/fleet/batch-service.js';
import { jobLoader } from './domain/jobs/job-loader.js';
import { PoolService } from './domain/fleet/pool-service.js';
import { JobLogService } from './domain/jobs/job-logs.js';
import { JobEvents } from './domain/jobs/job-events.js';
import { observeJobMetrics } from './domain/jobs/job-metrics.js';
import { noMetrics, type Metrics } from './domain/metrics.js';
import { JobSweeper, sweepIntervalMs } from './domain/jobs/job-sweeper.js';
import { RetentionService } from './domain/retention/retention-service.js';
import { OverviewService } from './domain/overview/overview-service.js';
import { OtaEngine } from './domain/ota/engine.js';
import { UpdateSpread } from './domain/ota/update-spread.js';
import { RolloutService } from './domain/ota/rollouts.js';
import { DeviceGroupService } from './domain/ota/device-groups.js';
import { createFileService } from './domain/files/create.js';
import { startFileSweeper } from './domain/files/file-sweeper.js';
import { AgentEvents } from './domain/agents/agent-events.js';
import { StreamRegistry } from './domain/agents/stream-registry.js';
import { withFreshDownloadUrls } from './domain/jobs/job-input-files.js';
import { ReconnectBudget } from './domain/agents/reconnect-budget.js';
import { bootstrapIfEmpty, type BootstrapResult } from './domain/orgs/bootstrap.js';
import { ReadRateLimiter } from './domain/discovery/read-rate-limiter.js';
import { loadKeys } from './keys.js';
import { SessionService } from './domain/auth/sessions.js';
import { ChatIntegrationService } from './domain/chat/integrations.js';
import { ChatReplayGuard } from './domain/chat/replays.js';
import { ChatRunService } from './domain/chat/chat-runs.js';
import { chatConnectors } from './domain/chat/providers/connectors.js';
import { chatSenders } from './domain/chat/providers/senders/index.js';
import { DeliveryWorker } from './domain/chat/notifications/delivery-worker.js';
import { SignInService } from './domain/auth/sign-in.js';
import { DeviceSignInService } from './domain/auth/device-sign-in.js';
import { AccountService } from './domain/auth/account.js';
import { AgentEnrollment } from './domain/agents/agent-enrollment.js';
import { ApiTokenService } from './domain/tokens/api-token-service.js';
import { EnrollmentTokenService } from './domain/agents/enrollment-tokens.js';
import { MemberService } from './domain/orgs/member-service.js';
import { InvitationService } from './domain/orgs/invitation-service.js';
import { TriggerService } from './domain/triggers/trigger-service.js';
import { TriggerRunService } from './domain/trigger-run/run-trigger.js';
import { CronScheduler, type Timers } from './domain/cron/scheduler.js';
import { CronSchedules } from './domain/cron/schedule.js';
import { relayTriggerChanges } from './domain/cron/trigger-changes.js';
import { buildApp } from './http/app.js';
import type { AppContext } from './http/context.js';
import { systemClock, type Clock } from './util/clock.js';
import type { PrometheusMetrics } from './metrics/prometheus-metrics.js';

export interface Coordinator {
  app: FastifyInstance;
  ctx: AppContext;
  /** The database it runs on (docs/operations.md, "Database"). */
  database: 'sqlite' | 'postgres';
  /** The SQLite connection (tests read and write through it); throws on a coordinator on PostgreSQL. */
  readonly db: Db;
  bootstrap: BootstrapResult;
  /** Fires cron triggers (docs/schedules.md). */
  scheduler: CronScheduler;
  /** Sends the chat outbox's messages: job notifications (docs/chat.md, "Notifications"). */
  chatDelivery: DeliveryWorker;
  /** The Prometheus series (docs/metrics.md); null when metrics are off. */
  metrics: PrometheusMetrics | null;
  /** Stops accepting requests, flushes pending writes and closes the database. */
  close(): Promise<void>;
}

/**
 * The composition root: opens and migrates the database (SQLite in the data directory, or the
 * PostgreSQL database of `DROVER_DATABASE_URL`: store.ts), loads the server key, bootstraps an
 * empty installation and builds the HTTP app. Listening is left to the caller.
 */
export async function createCoordinator(
  config: Config,
  logger: Logger,
  clock: Clock = systemClock,
  /** The cron scheduler's timer (tests drive it by hand); real timers by default. */
  timers?: Timers,
): Promise<Coordinator> {
  // Off unless a metrics setting is given: then nothing is measured, not even a clock read per commit.
  // prom-client is loaded only when metrics are on (docs/metrics.md, "Turning it on").
  const prometheus = metricsEnabled(config.metrics)
    ? new (await import('./metrics/prometheus-metrics.js')).PrometheusMetrics(logger)
    : null;
  const metrics: Metrics = prometheus ?? noMetrics;
  const store = await openStore(config, logger, prometheus ? (s, n) => prometheus.dbCommit(s, n) : undefined);
  try {
    const { repos } = store;
    // The keys every coordinator on a PostgreSQL database must hold alike are kept in it
    // (server_secrets); on SQLite, in the data directory.
    const keys = await loadKeys(store.kind, config.dataDir, repos, clock, logger);
    if (store.kind === 'postgres' && config.storage.kind === 'disk') {
      logger.info(
        { dataDir: config.dataDir },
        'files are kept in this data directory: other coordinators on this database cannot serve them (DROVER_STORAGE_URL names a bucket they share)',
      );
    }
    const serverKey = keys.serverKey;
    const sessions = await SessionService.create(repos, config.sessionTtlSeconds, clock);
    const audit = new AuditLog(repos.audit, clock);
    const readLimiter = new ReadRateLimiter(config.apiTokenReadRateLimitPerMinute, clock, metrics);
    // Job events reach the streams and sync callers of this coordinator and, on PostgreSQL, of the
    // other coordinators on the database (the relay: LISTEN/NOTIFY); theirs arrive here.
    const jobEvents = new JobEvents(store.relay);
    const files = await createFileService({
      repos,
      clock,
      dataDir: config.dataDir,
      storage: config.storage,
      config: () => ctx.config,
      logger,
      metrics,
    });
    const ota = new OtaEngine({
      bindings: repos.deviceBindings,
      jobEvents,
      clock,
      logger,
      sweepIntervalMs: sweepIntervalMs(config.jobDeadlineGraceMs),
      metrics,
      spread: new UpdateSpread({ startsPerSecond: config.updateStartsPerSecond, clock }),
    });
    const deviceGroups = new DeviceGroupService({ repos, audit, clock, jobEvents, ota });
    const signIn = new SignInService({
      users: repos.users,
      orgs: repos.orgs,
      sessions,
      audit,
      clock,
      logger,
      metrics,
      password: config.signIn.password,
    });
    // openid-client is loaded only when single sign-on is configured.
    const oidcSignIn = config.signIn.oidc
      ? new (await import('./domain/auth/oidc-sign-in.js')).OidcSignInService({
          config: config.signIn.oidc,
          repos,
          sessions,
          audit,
          clock,
          logger,
          publicUrl: () => ctx.config.publicUrl,
        })
      : null;
    const deviceSignIn = new DeviceSignInService({
      repos,
      sessions,
      clock,
      logger,
      publicUrl: () => ctx.config.publicUrl,
    });
    const account = new AccountService({ users: repos.users, orgs: repos.orgs, sessions, signIn, audit });
    const enrollment = new AgentEnrollment({ agents: repos.agents, audit, clock, logger, deviceGroups, metrics });
    const schedules = new CronSchedules();
    const triggers = new TriggerService({
      repos,
      audit,
      clock,
      schedules,
      limits: { triggers: config.maxTriggersPerOrg, enabledCron: config.maxCronTriggersPerOrg },
      // The scheduler (below) re-reads every trigger the service changes, and so do the other
      // coordinators' (relayTriggerChanges, below).
      onChanged: (triggerId) => {
        void scheduler.triggerChanged(triggerId);
        store.relay?.publish({ type: 'trigger_changed', triggerId });
      },
      cancelPoolJobs: async (orgId, triggerId) => {
        const waiting = await repos.pools.waitingOf(orgId, triggerId);
        for (const job of waiting) await cancels.cancelJob(job);
        return waiting.length;
      },
    });
    const apiTokens = new ApiTokenService({ repos, audit, clock });
    const members = new MemberService({ repos, audit, clock });
    const invitations = new InvitationService({ repos, audit, clock });
    const runs = new TriggerRunService({ repos, clock, audit, jobEvents, files, metrics });
    const cancels = new JobCancelService({
      repos,
      audit,
      jobEvents,
      clock,
      deadlineGraceMs: config.jobDeadlineGraceMs,
    });
    const batches = new BatchService({ repos, jobEvents, cancels, audit, clock, logger });
    const pools = new PoolService({ repos, jobEvents });
    const rollouts = new RolloutService({
      ctx: { repos, clock, jobEvents, ota },
      audit,
      jobEvents,
      logger,
      chat: { outbox: repos.chatOutbox, queued: () => chatDelivery.wake() },
    });
    const jobLogs = new JobLogService({ jobs: repos.jobs, maxBytes: config.jobLogMaxBytes });
    const retention = new RetentionService({
      repo: repos.retention,
      defaults: config.retention,
      clock,
      audit,
      logger,
      metrics,
      sweepSeconds: config.retentionSweepSeconds,
      // A sweep over a year of history would otherwise outrun the WAL's checkpoint (and grow it by GiBs).
      settled: () => store.writesSettled(),
    });
    const scheduler = new CronScheduler({
      triggers: repos.triggers,
      occurrences: repos.cronOccurrences,
      runs,
      clock,
      ...(timers ? { timers } : {}),
      logger,
    });
    const chatIntegrations = new ChatIntegrationService({
      repos,
      connectors: await chatConnectors(config.chat, logger),
      box: keys.secretBox,
      audit,
      clock,
      publicUrl: () => ctx.config.publicUrl,
    });
    const chatDelivery = new DeliveryWorker({
      outbox: repos.chatOutbox,
      senders: await chatSenders(config.chat, logger),
      workspace: async (provider, teamId) => {
        const integration = await repos.chatIntegrations.findByTeam(provider, teamId);
        if (!integration) return null;
        return { orgId: integration.orgId, token: await chatIntegrations.tokenOf(provider, teamId) };
      },
      clock,
      logger,
      publicUrl: () => ctx.config.publicUrl,
      giveUpAfterMs: config.chatGiveUpSeconds * 1000,
    });
    const chatRuns = new ChatRunService({
      repos,
      runs,
      clock,
      publicUrl: () => ctx.config.publicUrl,
      queued: () => chatDelivery.wake(),
    });
    const agentEvents = new AgentEvents();
    // The agents' streams (docs/agent-protocol.md §6): what a job's creation, cancel or end, and an
    // agent's revocation, committed on any coordinator, means for the streams open here.
    const streams = new StreamRegistry({
      agents: repos.agents,
      jobs: repos.jobs,
      clock,
      jobEvents,
      agentEvents,
      logger,
      pingMs: config.streamPingMs,
      disconnectGraceMs: config.agentDisconnectGraceMs,
      metrics,
      // On PostgreSQL other coordinators may share the database: the streams check it at each ping.
      shared: config.database.kind === 'postgres',
      pools,
      // Input files get a fresh download URL at every send (redelivery included); an update job's
      // `deploy` event also names its application.
      prepareAssignment: async (job, assignment) =>
        ota.withDeployFields(job, await withFreshDownloadUrls(files, job.orgId, assignment)),
    });
    const ctx: AppContext = {
      config,
      repos,
      clock,
      audit,
      sessions,
      signIn,
      oidcSignIn,
      deviceSignIn,
      account,
      enrollment,
      reconnects: new ReconnectBudget({ perSecond: config.reconnectBudgetPerSecond, clock }),
      agentEvents,
      streams,
      serverKey,
      readLimiter,
      jobEvents,
      files,
      triggers,
      apiTokens,
      enrollmentTokens: new EnrollmentTokenService({ repo: repos.enrollmentTokens, audit, clock }),
      members,
      invitations,
      runs,
      cancels,
      batches,
      pools,
      rollouts,
      retention,
      overview: new OverviewService({ repos, clock, schedules }),
      jobLogs,
      ota,
      deviceGroups,
      chatIntegrations,
      chatRuns,
      chatReplays: new ChatReplayGuard({ repos, clock }),
      metrics,
      httpMetrics: prometheus,
      health: new HealthCheck(store, logger),
    };
    // Revocations and stream openings travel between the coordinators too.
    const detachAgentEvents = store.relay ? agentEvents.attach(store.relay) : () => undefined;
    const bootstrap = await bootstrapIfEmpty(repos, config.bootstrap, clock);
    if (bootstrap.created)
      logger.info({ email: bootstrap.email, org: bootstrap.orgName }, 'bootstrapped owner and organization');
    const app = await buildApp(ctx, logger);
    streams.start();
    // Open streams would keep app.close() waiting for ever: they end first.
    app.addHook('preClose', (done) => {
      streams.close();
      done();
    });
    // Jobs past their deadline, and the open jobs of a revoked agent, are failed; running jobs whose
    // cancel was not confirmed in time are cancelled (docs/jobs.md).
    const sweeper = new JobSweeper({
      jobs: repos.jobs,
      jobEvents,
      clock,
      logger,
      deadlineGraceMs: config.jobDeadlineGraceMs,
      alsoSweep: () => batches.sweep(),
    });
    const stopRevocations = agentEvents.onRevoked((agent) => void sweeper.agentRevoked(agent.id));
    // A batch moves on as its jobs end here (its held jobs handed out, its end marked), and the
    // sweep catches up after a coordinator stopped in between (docs/fleets.md).
    // The jobs ended in one turn (a batch's cancel ends thousands) are read in a few statements.
    const endedJob = jobLoader(repos.jobs, logger, "its batch's progress");
    const stopBatches = batches.follow(async (jobId) => (await endedJob(jobId))?.batchId ?? null);
    // Jobs that start and end; at each scrape, the device bindings per state and when each agent
    // was last seen (docs/metrics.md).
    const stopJobMetrics = prometheus
      ? observeJobMetrics({ jobEvents, jobs: repos.jobs, metrics, logger })
      : () => undefined;
    const stopDeviceCounts = metrics.readOtaDevices(() => repos.deviceBindings.countByState());
    const stopLastSeen = metrics.readAgentsLastSeen(() => repos.agents.listLastSeen());
    const stopDatabaseSize = metrics.readDatabaseSize(async () => (await repos.retention.databaseSize()).bytes);
    sweeper.start();
    // Update jobs that end, and OTA retries that come due (docs/ota.md).
    ota.start();
    // Running rollouts move on as their waves' updates end and their soaks pass (docs/ota.md).
    rollouts.start();
    // What is past its organization's retention goes, in small batches (docs/operations.md).
    retention.start();
    const fileSweeper = startFileSweeper({ files, intervalMs: config.fileSweepIntervalMs, logger });
    // Cron triggers fire on schedule (docs/schedules.md), with the triggers changed on the other
    // coordinators of the database.
    const stopTriggerChanges = store.relay ? relayTriggerChanges(store.relay, scheduler) : () => undefined;
    await scheduler.start();
    // Mentions of the bot in Discord (docs/chat.md).
    const discordGateway = config.chat.discord
      ? new (await import('./domain/chat/providers/discord-gateway.js')).DiscordGateway({
          config: config.chat.discord,
          chatRuns,
          logger,
        })
      : null;
    discordGateway?.start();
    // Chat messages written by the job paths go out (docs/chat.md, "Notifications"), at once
    // when a job of this coordinator ends.
    chatDelivery.start();
    const stopChatWakes = jobEvents.onJobFinished(() => chatDelivery.wake());
    // Asked for port 0 without a public URL: once bound, the public URL names the real port.
    app.addHook('onListen', (done) => {
      const address = app.server.address();
      if (address && typeof address === 'object') ctx.config = withListeningPort(ctx.config, address.port);
      done();
    });
    let closed = false;
    return {
      app,
      ctx,
      database: store.kind,
      get db() {
        if (!store.db) throw new Error('this coordinator runs on PostgreSQL: it has no SQLite connection');
        return store.db;
      },
      bootstrap,
      scheduler,
      chatDelivery,
      metrics: prometheus,
      async close() {
        if (closed) return;
        closed = true;
        try {
          stopRevocations();
          stopBatches();
          stopTriggerChanges();
          detachAgentEvents();
          stopChatWakes();
          stopJobMetrics();
          stopDeviceCounts();
          stopLastSeen();
          stopDatabaseSize();
          await discordGateway?.stop();
          await sweeper.stop();
          await rollouts.stop();
          await retention.stop();
          await ota.stop();
          await fileSweeper.stop();
          await scheduler.stop();
          await chatDelivery.stop();
          await app.close();
          await audit.flush();
        } finally {
          await store.close();
        }
      },
    };
  } catch (error) {
    await store.close();
    throw error;
  }
}

import path from 'node:path';
import type { KeyObject } from 'node:crypto';
import type { Logger } from 'pino';
import { formatLabels, publicKeyFromBase64, versionWithRuntime } from '@drover/shared';
import { createDeployment, type Deployment } from '../deploy/create-deployment.js';
import type { DeploySync } from '../deploy/deploy-sync.js';
import { rememberInterruptedUpdate } from '../deploy/run-deploy-job.js';
import { AgentError } from '../errors.js';
import { formatDuration } from '../exec/durations.js';
import { killAllProcessGroups } from '../exec/process-group.js';
import { shortSecretWarning, type Masker } from '../exec/secret-masker.js';
import { StepLauncher } from '../exec/step-launcher.js';
import type { DownloadSettings } from '../files/download.js';
import { jobFileTransfer } from '../files/job-file-transfer.js';
import { prunePartials } from '../files/partial-download.js';
import type { SignedCaller } from '../http/client.js';
import { describeRouteFor, routeFor, trustedCaFile } from '../http/dispatcher.js';
import { describeClockChange, ServerClock } from '../http/server-clock.js';
import { JobManager } from '../jobs/job-manager.js';
import { Journal } from '../jobs/journal.js';
import { httpTransport } from '../outbox/http-transport.js';
import { ReportClaims } from './report-claims.js';
import { Outbox } from '../outbox/outbox.js';
import { describeReport, type Report } from '../outbox/report.js';
import { ReportSender } from '../outbox/report-sender.js';
import { loadEnrollment, loadPrivateKey, tightenPrivateKeyMode, type Enrollment } from '../state/enrollment.js';
import { ensurePrivateDir } from '../state/files.js';
import { DaemonStatusWriter } from '../status/daemon-status-writer.js';
import { CountersWriter } from '../status/counters-writer.js';
import { StreamClient } from '../stream/stream-client.js';
import { RESTART_EXIT_CODE } from '../self-update/builtin-workflow.js';
import { SelfUpdate } from '../self-update/self-update.js';
import { AGENT_VERSION } from '../version.js';
import { LabelReporter } from './label-reporter.js';
import { acquireDaemonLock } from './lock.js';
import { resolveDaemonOptions, type DaemonOptions, type ResolvedDaemonOptions } from './options.js';
import { releaseStartupMemory, RELEASE_DELAY_MS } from './release-startup-memory.js';
import { routeStreamMessage } from './route-message.js';
import { WorkflowRegistry } from './workflow-registry.js';

export interface Daemon {
  readonly options: ResolvedDaemonOptions;
  readonly enrollment: Enrollment;
  readonly jobs: JobManager;
  readonly stream: StreamClient;
  readonly status: DaemonStatusWriter;
  /** What the agent did: jobs run, failed, rejected, reconnects, bytes moved (docs/metrics.md). */
  readonly counters: CountersWriter;
  /** Graceful stop (docs/agent.md, "Shutdown"); resolves when everything is closed. Idempotent. */
  stop(): Promise<void>;
  /** Kills the running step's process group at once (a second signal): the process exits next. */
  killNow(): void;
  /** Resolves once the daemon has stopped. */
  readonly stopped: Promise<void>;
  /**
   * The exit code the process must end with once stopped, when it stopped to be started again
   * (self-update and its rollback: RESTART_EXIT_CODE); null after an ordinary stop.
   */
  readonly exitCode: number | null;
}

/** The enrollment and key of the state directory; an AgentError when it is not enrolled. */
export function loadIdentity(stateDir: string): { enrollment: Enrollment; privateKey: KeyObject } {
  const enrollment = loadEnrollment(stateDir);
  if (!enrollment) {
    throw new AgentError(
      'not_enrolled',
      `This machine is not enrolled (nothing in ${stateDir}); run \`drover-agent enroll --url <url> --token <drve_...>\` first`,
    );
  }
  return { enrollment, privateKey: loadPrivateKey(stateDir) };
}

/**
 * Starts the agent daemon: takes the state directory's lock, reads the journal and the outbox
 * left by a previous run, loads and watches the workflows, fails jobs a crash interrupted, then
 * holds the stream to the coordinator and runs the jobs it pushes. Each step is a function below,
 * in the order it runs.
 */
export async function startDaemon(input: DaemonOptions): Promise<Daemon> {
  const options = resolveDaemonOptions(input);
  const { enrollment, privateKey, releaseLock } = await takeStateDirectory(options);
  const launcher = new StepLauncher(); // forks its spare once the journal is recovered
  // Asked for by the self-update (possibly while starting): the daemon stops, the process exits with the code.
  let exitCode: number | null = null;
  let stopForRestart = () => {};
  try {
    const status = openStatus(options, enrollment);
    const counters = openCounters(options);
    const caller = signedCaller({ options, enrollment, status }, privateKey);
    const reports = openReports({ options, caller });
    const selfUpdate = createSelfUpdate(options, status, () => {
      exitCode = RESTART_EXIT_CODE;
      stopForRestart();
    });
    const registry = createRegistry({ options, caller, status, selfUpdate });
    const labels = createLabelReporter({ options, caller, status });
    const deployment = openDeployment({ options, enrollment, caller, reports, counters, selfUpdate });
    const jobs = createJobManager({ options, caller, status, counters, reports, registry, deployment, launcher });

    await registry.load();
    const adopted = selfUpdate?.resume({
      finishJob: (jobId, result) => jobs.finishJob(jobId, result),
      deploy: { api: deployment.api, store: deployment.store, masker: reports.masker },
    });
    jobs.recover(adopted);
    void jobs.prepareNext();

    const { stream, sync } = connect({
      options,
      caller,
      status,
      counters,
      reports,
      registry,
      labels,
      deployment,
      jobs,
      selfUpdate,
    });
    logStarted({ options, enrollment });
    // An agent may run for months without a restart: what the retention let go is removed while
    // it runs too, else every job's directory (and its journal entry, in memory) stayed until then.
    const pruning = setInterval(() => reports.pruneAgain(), options.pruneIntervalMs);
    pruning.unref();
    const { stop, stopped } = stopper({
      pruning,
      options,
      stream,
      sync,
      registry,
      jobs,
      reports,
      launcher,
      status,
      counters,
      releaseLock,
      selfUpdate,
    });
    stopForRestart = () => void stop();
    if (exitCode !== null) stopForRestart(); // a rollback decided while starting
    return {
      options,
      enrollment,
      jobs,
      stream,
      status,
      counters,
      stop,
      killNow: () => {
        jobs.killNow();
        killAllProcessGroups();
      },
      stopped,
      get exitCode() {
        return exitCode;
      },
    };
  } catch (error) {
    launcher.close();
    releaseLock();
    throw error;
  }
}

/** What the steps make, each passed on to the steps after it that use it. */
interface Parts {
  options: ResolvedDaemonOptions;
  enrollment: Enrollment;
  releaseLock(): void;
  launcher: StepLauncher;
  status: DaemonStatusWriter;
  counters: CountersWriter;
  caller: SignedCaller;
  reports: Reports;
  registry: WorkflowRegistry;
  labels: LabelReporter;
  deployment: Deployment;
  jobs: JobManager;
  stream: StreamClient;
  sync: DeploySync;
  /** The agent updating its own binary; null when not running as the single executable. */
  selfUpdate: SelfUpdate | null;
}

interface Reports {
  journal: Journal;
  outbox: Outbox;
  sender: ReportSender;
  /** Logs a damaged file that was skipped (journal, outbox, deployment state). */
  damaged(file: string, reason: string): void;
  /** The secret values known now, masked out of every report. */
  masker(): Masker;
  /** Removes what the retention let go again, as at start (a failure is logged). */
  pruneAgain(): void;
}

/**
 * The identity, the secrets and the lock: the state directory is enrolled, its key is private
 * and no other daemon uses it. The secrets are read before anything is logged or sent: the
 * agent's log, every report, deployment report and workflow definition are masked with the
 * secret values read so far (docs/agent.md, "How a job runs").
 */
async function takeStateDirectory(
  options: ResolvedDaemonOptions,
): Promise<{ enrollment: Enrollment; privateKey: KeyObject; releaseLock: () => void }> {
  const { stateDir, logger, secrets } = options;
  ensurePrivateDir(stateDir);
  const { enrollment, privateKey } = loadIdentity(stateDir);
  const short = shortSecretWarning((await secrets.load()).secrets);
  if (short) logger.warn(short);
  const loosened = tightenPrivateKeyMode(stateDir);
  if (loosened !== null) {
    logger.warn(`the agent key was readable by other users (mode ${loosened.toString(8)}); it is mode 600 again`);
  }
  const releaseLock = acquireDaemonLock(stateDir);
  return { enrollment, privateKey, releaseLock };
}

/** `status.json`, written at once: the daemon is connecting, with an empty queue. */
function openStatus(options: ResolvedDaemonOptions, enrollment: Enrollment): DaemonStatusWriter {
  const { logger } = options;
  return new DaemonStatusWriter(
    options.stateDir,
    {
      pid: process.pid,
      startedAt: new Date().toISOString(),
      version: AGENT_VERSION,
      connection: 'connecting',
      lastConnectedAt: null,
      lastError: null,
      clockOffsetMs: null,
      proxy: describeRouteFor(new URL(enrollment.url)),
      queue: { capacity: options.queueCapacity, running: null, waiting: [] },
      workflows: { loaded: 0, invalid: [] },
    },
    (error) => logger.error({ err: error }, 'cannot write status.json'),
    undefined,
    () => options.secrets.masker,
  );
}

/**
 * The counters (`counters.json`, and `--metrics-file` if given), from the counts the previous run
 * left: they go on across restarts.
 */
function openCounters(options: ResolvedDaemonOptions): CountersWriter {
  const { logger } = options;
  return new CountersWriter(options.stateDir, {
    metricsFile: options.metricsFile,
    onError: (error) => logger.error({ err: error }, 'cannot write the counters'),
    // Said, not silent: the lifetime counts (and the metrics built on them) restart from zero.
    onDamaged: (file, reason) =>
      logger.warn({ file }, `${file} is damaged (${reason}): the agent's lifetime counters start again from zero`),
  });
}

/**
 * How the daemon calls the coordinator: signed with the agent key, at the coordinator's time as
 * learned from its answers. An edge clock is often wrong, and the signatures must be within
 * 300 s of the coordinator's (docs/agent.md, "Clocks"); each change of the offset goes to
 * `status.json` and, when it matters, to the log.
 */
function signedCaller(
  { options, enrollment, status }: Pick<Parts, 'options' | 'enrollment' | 'status'>,
  privateKey: KeyObject,
): SignedCaller {
  const { logger } = options;
  const clock = new ServerClock(Date.now, (change) => {
    status.update({ clockOffsetMs: change.offsetMs });
    const said = describeClockChange(change);
    if (said) logger[said.level]({ clockOffsetMs: change.offsetMs }, said.message);
  });
  return {
    origin: enrollment.url,
    agentId: enrollment.agentId,
    privateKey,
    clock,
  };
}

/**
 * What the last run left: the journal (directories of jobs settled long ago removed), the outbox
 * of reports the coordinator has not taken yet, and the sender that delivers reports in order. A
 * job's result or refusal that reaches the coordinator is marked delivered in the journal.
 */
function openReports({ options, caller }: Pick<Parts, 'options' | 'caller'>): Reports {
  const { stateDir, logger, secrets } = options;
  const damaged = (file: string, reason: string) =>
    logger.error({ file }, `skipped a damaged file: ${file} (${reason})`);
  const masker = () => secrets.masker;
  const journal = Journal.open(stateDir, damaged);
  pruneSettled(journal, options);
  const outbox = Outbox.open(path.join(stateDir, 'outbox'), { onDamaged: damaged, logger });
  if (outbox.size > 0)
    logger.info(`${outbox.size} report(s) left in the outbox by the previous run will be sent after connecting`);
  const sender = new ReportSender({
    outbox,
    transport: httpTransport(caller),
    logger,
    onSettled: markSettledInJournal(journal, logger),
    masker,
  });
  const pruneAgain = () => {
    try {
      pruneSettled(journal, options);
    } catch (error) {
      logger.warn({ err: error }, 'could not remove the job directories due for removal; trying again later');
    }
  };
  return { journal, outbox, sender, damaged, masker, pruneAgain };
}

/**
 * Removes the directories of jobs settled longer ago than the retention, and the partial
 * downloads untouched for as long: at start, then every `pruneIntervalMs`.
 */
function pruneSettled(journal: Journal, options: ResolvedDaemonOptions): void {
  const { logger } = options;
  const pruned = journal.prune(options.jobRetentionMs, Date.now(), (dir, reason) =>
    logger.warn(
      { dir },
      `cannot remove the job directory ${dir}, due for removal (${reason}); it is tried again later, or remove it by hand`,
    ),
  );
  if (pruned > 0)
    logger.info(
      `removed ${pruned} job director${pruned === 1 ? 'y' : 'ies'} settled, or left without a readable journal, more than ${formatDuration(options.jobRetentionMs)} ago`,
    );
  const partials = prunePartials(downloadSettings(options).partialsDir, options.jobRetentionMs);
  if (partials > 0) {
    logger.info(
      `removed ${partials} file(s) of partial downloads untouched for more than ${formatDuration(options.jobRetentionMs)}`,
    );
  }
}

/**
 * The report sender's `onSettled`: notes in the journal that the coordinator took a job's result.
 * A write that fails (the disk is full) is logged and the agent goes on (docs/agent.md, "When the
 * coordinator cannot be reached"): the coordinator has the result, and sending it again after a
 * restart is answered as a duplicate. Thrown, it would reject the sender's chain and crash the agent.
 */
export function markSettledInJournal(journal: Journal, logger: Logger): (report: Report) => void {
  return (report) => {
    try {
      journal.markFinalDelivered(report);
    } catch (error) {
      logger.error(
        { err: error, jobId: report.jobId, report: report.kind },
        `cannot note in the journal that the coordinator took the ${describeReport(report)} ` +
          `(${(error as Error).message}); the agent goes on, and may send it again after a restart`,
      );
    }
  };
}

/**
 * The self-update of the single executable (docs/agent.md, "Self-update"): whether it offers its
 * built-in update workflow depends on `--no-self-update`, but an update in flight is settled
 * whatever the setting. Null when the agent does not run as the single executable.
 */
function createSelfUpdate(
  options: ResolvedDaemonOptions,
  status: DaemonStatusWriter,
  restart: () => void,
): SelfUpdate | null {
  const { logger, executable } = options;
  if (executable === null) {
    logger.debug('self-update is off: the agent does not run as the single executable');
    return null;
  }
  if (!options.selfUpdate)
    logger.info(`self-update is off (${options.selfUpdateSource}): drover-agent-update is not offered`);
  return new SelfUpdate({
    stateDir: options.stateDir,
    logger,
    executable,
    version: AGENT_VERSION,
    enabled: options.selfUpdate,
    deadlineMs: options.selfUpdateDeadlineMs,
    restart: (reason) => {
      logger.info(`restarting: ${reason}`);
      restart();
    },
    lastError: () => status.current.lastError,
  });
}

/** The workflows directory as the daemon knows it; each load is counted in `status.json`. */
function createRegistry({
  options,
  caller,
  status,
  selfUpdate,
}: Pick<Parts, 'options' | 'caller' | 'status' | 'selfUpdate'>): WorkflowRegistry {
  const { secrets } = options;
  return new WorkflowRegistry({
    builtins: selfUpdate?.workflows ?? [],
    dir: options.workflowsDir,
    caller,
    logger: options.logger,
    onLoaded: (summary) => status.update({ workflows: summary }),
    masker: async () => {
      await secrets.load(); // the definitions are sent rarely: read the file afresh
      return secrets.masker;
    },
  });
}

/** The labels the agent reports at every connect; how the coordinator took them goes to `status.json`. */
function createLabelReporter({ options, caller, status }: Pick<Parts, 'options' | 'caller' | 'status'>): LabelReporter {
  const reporter = new LabelReporter({
    labels: options.labels,
    caller,
    logger: options.logger,
    onChange: (labels) => status.update({ labels }),
  });
  status.update({ labels: reporter.status });
  return reporter;
}

/** The over-the-air update parts, which trust the server key pinned at enrollment. */
function openDeployment({
  options,
  enrollment,
  caller,
  reports,
  counters,
  selfUpdate,
}: Pick<Parts, 'options' | 'enrollment' | 'caller' | 'reports' | 'counters' | 'selfUpdate'>): Deployment {
  return createDeployment({
    stateDir: options.stateDir,
    caller,
    serverKey: publicKeyFromBase64(enrollment.serverPublicKey),
    logger: options.logger,
    postponeOptional: options.postponeOptional,
    onDamaged: reports.damaged,
    masker: reports.masker,
    onDownloaded: (bytes) => counters.add('bytesDownloaded', bytes),
    ...(selfUpdate ? { selfUpdate } : {}),
    downloads: downloadSettings(options),
  });
}

/**
 * How artifacts and input files are downloaded: partials kept in `<state-dir>/downloads` (on the
 * jobs' file system, for a rename into place), the minimum speed of the run options.
 */
function downloadSettings(options: ResolvedDaemonOptions): DownloadSettings & { partialsDir: string } {
  return {
    partialsDir: path.join(options.stateDir, 'downloads'),
    minSpeed: options.minDownloadSpeed,
    speedWindowMs: options.downloadSpeedWindowMs,
  };
}

/**
 * The job manager over the journal and the reports, running update jobs with the deployment's
 * runner; every change of its queue goes to `status.json`.
 */
function createJobManager(
  p: Pick<Parts, 'options' | 'caller' | 'status' | 'counters' | 'reports' | 'registry' | 'deployment' | 'launcher'>,
): JobManager {
  const { options, status, counters } = p;
  return new JobManager({
    stateDir: options.stateDir,
    journal: p.reports.journal,
    outbox: p.reports.outbox,
    sender: p.reports.sender,
    capacity: options.queueCapacity,
    workflows: p.registry,
    loadSecrets: () => options.secrets.load(),
    logger: options.logger,
    defaultJobTimeoutMs: options.defaultJobTimeoutMs,
    killGraceMs: options.killGraceMs,
    transfer: jobFileTransfer(
      p.caller,
      undefined,
      (direction, bytes) => counters.add(direction === 'download' ? 'bytesDownloaded' : 'bytesUploaded', bytes),
      downloadSettings(options),
    ),
    counters,
    runUpdateJob: p.deployment.runJob,
    onInterrupted: (entry, message) => rememberInterruptedUpdate(p.deployment.store, entry, message, options.logger),
    launcher: p.launcher,
    onQueueChange: (queue) =>
      status.update({ queue: { capacity: options.queueCapacity, running: queue.running, waiting: queue.waiting } }),
  });
}

/**
 * The stream and the deployment sync (the pull fallback of over-the-air updates), started. The
 * stream records each change of its state in `status.json` before anything else, so the sync
 * polls only while the status says connected: while the stream is. At each connect the outbox
 * is sent and the desired releases checked; the workflows and the labels are reported before each
 * connect (so a job waiting for an agent of these labels finds it as the stream opens), or claimed
 * when unchanged (report-claims.ts), the workflows also whenever the directory changes while connected.
 */
function connect(
  p: Pick<
    Parts,
    | 'options'
    | 'caller'
    | 'status'
    | 'counters'
    | 'reports'
    | 'registry'
    | 'labels'
    | 'deployment'
    | 'jobs'
    | 'selfUpdate'
  >,
): Pick<Parts, 'stream' | 'sync'> {
  const { options, status, counters, registry, labels, jobs } = p;
  const reports = new ReportClaims(registry, labels);
  let connectedBefore = false;
  let streamOpen = false;
  const { logger } = options;
  const sync = p.deployment.sync({
    intervalMs: options.deployPollIntervalMs,
    connected: () => status.current.connection === 'connected',
    busy: () => jobs.deployingApplications(),
  });
  const stream = new StreamClient({
    ...p.caller,
    logger,
    queueCapacity: options.queueCapacity,
    idleTimeoutMs: options.streamIdleTimeoutMs,
    beforeConnect: () => reports.prepare(),
    onReportsChecked: (checks) => reports.checked(checks),
    onReportsOutdated: () => reports.outdated(),
    onMessage: (message) => routeStreamMessage(message, jobs, logger),
    onState: (state, error) => {
      const now = new Date().toISOString();
      status.update({
        connection: state,
        // The last moment the stream was open, which `status` shows once it is not: when it
        // connected, then when it dropped (not its connect of hours before, which would read as
        // hours without the coordinator).
        ...(state === 'connected' || streamOpen ? { lastConnectedAt: now } : {}),
        ...(state === 'connected' ? { lastError: null } : {}),
        ...(error ? { lastError: error } : {}),
      });
      streamOpen = state === 'connected';
      if (state === 'connected') {
        if (connectedBefore) counters.add('reconnects');
        else setTimeout(releaseStartupMemory, RELEASE_DELAY_MS).unref();
        connectedBefore = true;
        // A new binary on trial has connected: its update job succeeded (before the sync looks at it).
        p.selfUpdate?.connected();
        void p.reports.sender.drainNow();
        void sync.check('connect');
      }
    },
  });
  registry.watch(() => {
    if (stream.state !== 'connected') return; // reported at the next connect
    registry
      .report()
      .catch((error: unknown) =>
        logger.warn({ err: error }, 'could not report the workflows; retrying at the next connect'),
      );
  });
  stream.start();
  sync.start();
  return { stream, sync };
}

function logStarted({ options, enrollment }: Pick<Parts, 'options' | 'enrollment'>): void {
  options.logger.info(
    {
      agentId: enrollment.agentId,
      version: AGENT_VERSION,
      node: process.versions.node,
      queueCapacity: options.queueCapacity,
      labels: options.labels,
    },
    `drover-agent ${versionWithRuntime(AGENT_VERSION)} started (agent ${enrollment.agentId}, coordinator ${enrollment.url}, ` +
      `workflows in ${options.workflowsDir}, queue capacity ${options.queueCapacity}, labels: ${formatLabels(options.labels)})`,
  );
  logNetwork(options, enrollment);
}

/**
 * How the coordinator is reached, when it is not the plain way: through which proxy (its password
 * masked), or directly because NO_PROXY names it; and the `--ca-file` trusted.
 */
function logNetwork({ logger }: ResolvedDaemonOptions, enrollment: Enrollment): void {
  const coordinator = new URL(enrollment.url);
  const route = routeFor(coordinator);
  const described = describeRouteFor(coordinator);
  if (route.proxy) logger.info({ proxy: route.proxy.shown }, `reaching the coordinator through the proxy ${described}`);
  else if (route.bypassedBy !== null) logger.info(`reaching the coordinator directly: ${described}`);
  const caFile = trustedCaFile();
  if (caFile) logger.info(`trusting the certificates of ${caFile} in addition to the default ones`);
}

/**
 * The graceful stop (docs/agent.md, "Shutdown"), run once however often it is asked for: no new
 * jobs (the coordinator keeps them pending for the next start), the running job gets the grace
 * period, the outbox is flushed for a while, then everything is closed and the lock released.
 */
function stopper(
  p: Pick<
    Parts,
    | 'options'
    | 'stream'
    | 'sync'
    | 'registry'
    | 'jobs'
    | 'reports'
    | 'launcher'
    | 'status'
    | 'counters'
    | 'releaseLock'
    | 'selfUpdate'
  > & { pruning: NodeJS.Timeout },
): { stop: () => Promise<void>; stopped: Promise<void> } {
  const { options, reports } = p;
  const { logger } = options;
  const { promise: stopped, resolve: resolveStopped } = Promise.withResolvers<void>();
  let stopping: Promise<void> | null = null;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      logger.info(
        `shutting down: no new jobs; the running job has ${formatDuration(options.shutdownGraceMs)} to finish`,
      );
      p.stream.stop();
      p.sync.stop();
      p.selfUpdate?.close();
      p.registry.close();
      clearInterval(p.pruning);
      try {
        await p.jobs.shutdown(options.shutdownGraceMs);
        const empty = await reports.sender.flush(options.flushTimeoutMs);
        if (!empty)
          logger.warn(
            `${reports.outbox.size} report(s) could not be delivered; they stay in the outbox for the next start`,
          );
      } finally {
        // What the stopped steps left (a process that ignored SIGTERM, a background child) goes
        // with the agent: the SIGKILL its grace would have sent never comes once the process exits.
        killAllProcessGroups();
        p.launcher.close();
        reports.sender.close();
        p.status.close({
          connection: 'disconnected',
          queue: { capacity: options.queueCapacity, running: null, waiting: [] },
        });
        p.counters.close();
        p.releaseLock();
        logger.info('drover-agent stopped');
        resolveStopped();
      }
    })();
    return stopping;
  };
  return { stop, stopped };
}

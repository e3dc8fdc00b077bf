import path from 'node:path';
import type { KeyObject } from 'node:crypto';
import { publicKeyFromBase64 } from '@drover/shared';
import { createDeployment } from '../deploy/create-deployment.js';
import { AgentError } from '../errors.js';
import { formatDuration } from '../exec/durations.js';
import { killAllProcessGroups } from '../exec/process-group.js';
import { StepLauncher } from '../exec/step-launcher.js';
import { jobFileTransfer } from '../files/job-file-transfer.js';
import type { SignedCaller } from '../http/client.js';
import { describeClockChange, ServerClock, type ClockChange } from '../http/server-clock.js';
import { JobManager } from '../jobs/job-manager.js';
import { Journal } from '../jobs/journal.js';
import { httpTransport } from '../outbox/http-transport.js';
import { Outbox } from '../outbox/outbox.js';
import { ReportSender } from '../outbox/report-sender.js';
import { loadEnrollment, loadPrivateKey, tightenPrivateKeyMode, type Enrollment } from '../state/enrollment.js';
import { ensurePrivateDir } from '../state/files.js';
import { StreamClient } from '../stream/stream-client.js';
import { DaemonStatusWriter } from '../status/daemon-status-writer.js';
import { AGENT_VERSION } from '../version.js';
import { acquireDaemonLock } from './lock.js';
import { resolveDaemonOptions, type DaemonOptions, type ResolvedDaemonOptions } from './options.js';
import { routeStreamMessage } from './route-message.js';
import { WorkflowRegistry } from './workflow-registry.js';

export interface Daemon {
  readonly options: ResolvedDaemonOptions;
  readonly enrollment: Enrollment;
  readonly jobs: JobManager;
  readonly stream: StreamClient;
  readonly status: DaemonStatusWriter;
  /** Graceful stop (docs/agent.md, "Shutdown"); resolves when everything is closed. Idempotent. */
  stop(): Promise<void>;
  /** Kills the running step's process group at once (a second signal): the process exits next. */
  killNow(): void;
  /** Resolves once the daemon has stopped. */
  readonly stopped: Promise<void>;
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
 * holds the stream to the coordinator and runs the jobs it pushes.
 */
export async function startDaemon(input: DaemonOptions): Promise<Daemon> {
  const options = resolveDaemonOptions(input);
  const { stateDir, logger } = options;
  ensurePrivateDir(stateDir);
  const { enrollment, privateKey } = loadIdentity(stateDir);
  // Read before anything is logged or sent: the agent's log, every report, deployment report and
  // workflow definition are masked with the secret values read so far (docs/agent.md, "How a job runs").
  const { secrets } = options;
  await secrets.load();
  const loosened = tightenPrivateKeyMode(stateDir);
  if (loosened !== null) {
    logger.warn(`the agent key was readable by other users (mode ${loosened.toString(8)}); it is mode 600 again`);
  }
  const releaseLock = acquireDaemonLock(stateDir);
  // The coordinator's time, learned from its answers: an edge clock is often wrong, and the
  // signatures must be within 300 s of the coordinator's (docs/agent.md, "Clocks").
  let onClockChange = (_change: ClockChange) => {};
  const clock = new ServerClock(Date.now, (change) => onClockChange(change));
  const caller: SignedCaller = {
    origin: enrollment.url,
    agentId: enrollment.agentId,
    privateKey,
    clock,
    ...(options.dispatcher ? { dispatcher: options.dispatcher } : {}),
  };

  const launcher = new StepLauncher(); // forks its spare once the journal is recovered
  try {
    const status = new DaemonStatusWriter(
      stateDir,
      {
        pid: process.pid,
        startedAt: new Date().toISOString(),
        version: AGENT_VERSION,
        connection: 'connecting',
        lastConnectedAt: null,
        lastError: null,
        clockOffsetMs: null,
        queue: { capacity: options.queueCapacity, running: null, waiting: [] },
        workflows: { loaded: 0, invalid: [] },
      },
      (error) => logger.error({ err: error }, 'cannot write status.json'),
    );
    onClockChange = (change) => {
      status.update({ clockOffsetMs: change.offsetMs });
      const said = describeClockChange(change);
      if (said) logger[said.level]({ clockOffsetMs: change.offsetMs }, said.message);
    };
    const damaged = (file: string, reason: string) =>
      logger.error({ file }, `skipped a damaged file: ${file} (${reason})`);
    const journal = Journal.open(stateDir, damaged);
    const pruned = journal.prune(options.jobRetentionMs);
    if (pruned > 0)
      logger.info(
        `removed ${pruned} job director${pruned === 1 ? 'y' : 'ies'} settled, or left without a readable journal, more than ${formatDuration(options.jobRetentionMs)} ago`,
      );
    const masker = () => secrets.masker;
    const outbox = Outbox.open(path.join(stateDir, 'outbox'), damaged);
    if (outbox.size > 0)
      logger.info(`${outbox.size} report(s) left in the outbox by the previous run will be sent after connecting`);

    const deployment = createDeployment({
      stateDir,
      caller,
      serverKey: publicKeyFromBase64(enrollment.serverPublicKey),
      logger,
      postponeOptional: options.postponeOptional,
      onDamaged: damaged,
      masker,
    });
    let jobs: JobManager | null = null;
    const sender = new ReportSender({
      outbox,
      transport: httpTransport(caller),
      logger,
      onSettled: (report) => jobs?.onReportSettled(report),
      masker,
    });
    const registry = new WorkflowRegistry({
      dir: options.workflowsDir,
      caller,
      logger,
      onLoaded: (summary) => status.update({ workflows: summary }),
      masker: async () => {
        await secrets.load(); // the definitions are sent rarely: read the file afresh
        return secrets.masker;
      },
    });
    jobs = new JobManager({
      stateDir,
      journal,
      outbox,
      sender,
      capacity: options.queueCapacity,
      workflows: registry,
      loadSecrets: () => secrets.load(),
      logger,
      defaultJobTimeoutMs: options.defaultJobTimeoutMs,
      killGraceMs: options.killGraceMs,
      transfer: jobFileTransfer(caller),
      deploy: deployment.context,
      launcher,
      onQueueChange: () =>
        status.update({
          queue: { capacity: options.queueCapacity, running: jobs!.queue.running, waiting: jobs!.queue.waiting },
        }),
    });
    const manager = jobs;

    await registry.load();
    manager.recover();
    launcher.warm();

    const stream = new StreamClient({
      ...caller,
      logger,
      queueCapacity: options.queueCapacity,
      idleTimeoutMs: options.streamIdleTimeoutMs,
      beforeConnect: () => registry.report(true),
      onMessage: (message) => routeStreamMessage(message, manager, logger),
      onState: (state, error) => {
        const now = new Date().toISOString();
        status.update({
          connection: state,
          ...(state === 'connected' ? { lastConnectedAt: now, lastError: null } : {}),
          ...(error ? { lastError: error } : {}),
        });
        if (state === 'connected') {
          void sender.drainNow();
          void sync.check('connect');
        }
      },
    });
    const sync = deployment.sync({
      intervalMs: options.deployPollIntervalMs,
      connected: () => stream.state === 'connected',
      busy: () => manager.deployingApplications(),
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
    logger.info(
      { agentId: enrollment.agentId, version: AGENT_VERSION, queueCapacity: options.queueCapacity },
      `drover-agent ${AGENT_VERSION} started (agent ${enrollment.agentId}, coordinator ${enrollment.url}, ` +
        `workflows in ${options.workflowsDir}, queue capacity ${options.queueCapacity})`,
    );

    let stopping: Promise<void> | null = null;
    let resolveStopped!: () => void;
    const stopped = new Promise<void>((resolve) => {
      resolveStopped = resolve;
    });

    const stop = (): Promise<void> => {
      stopping ??= (async () => {
        logger.info(
          `shutting down: no new jobs; the running job has ${formatDuration(options.shutdownGraceMs)} to finish`,
        );
        stream.stop(); // the coordinator keeps new jobs pending for the next start
        sync.stop();
        registry.close();
        try {
          await manager.shutdown(options.shutdownGraceMs);
          const empty = await sender.flush(options.flushTimeoutMs);
          if (!empty)
            logger.warn(`${outbox.size} report(s) could not be delivered; they stay in the outbox for the next start`);
        } finally {
          launcher.close();
          sender.close();
          status.close({
            connection: 'disconnected',
            queue: { capacity: options.queueCapacity, running: null, waiting: [] },
          });
          releaseLock();
          logger.info('drover-agent stopped');
          resolveStopped();
        }
      })();
      return stopping;
    };

    return {
      options,
      enrollment,
      jobs: manager,
      stream,
      status,
      stop,
      killNow: () => {
        manager.killNow();
        killAllProcessGroups();
      },
      stopped,
    };
  } catch (error) {
    launcher.close();
    releaseLock();
    throw error;
  }
}

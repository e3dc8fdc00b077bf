import type { Logger } from 'pino';
import type { JobAssignment, WorkflowDefinition } from '@drover/shared';
import { failedResult, type JobResult } from '../exec/run-workflow.js';
import { formatDuration } from '../exec/durations.js';
import { makeSpareJobDir } from '../exec/job-files.js';
import { killOrphanedStep } from '../exec/orphans.js';
import type { Outbox } from '../outbox/outbox.js';
import type { ReportSender, SendOutcome } from '../outbox/report-sender.js';
import type { Report } from '../outbox/report.js';
import type { LoadedSecrets } from '../workflows/index.js';
import {
  CANCELLED_BEFORE_START_MESSAGE,
  CANCELLED_BY_USER_BEFORE_START_MESSAGE,
  CANCELLED_NOT_HELD_MESSAGE,
  DAMAGED_MESSAGE,
  decideIntake,
  INTERRUPTED_MESSAGE,
  LOST_MESSAGE,
} from './intake.js';
import { JobStop } from './job-stop.js';
import { JobQueue } from './job-queue.js';
import type { JobRunDeps, RunJob } from './job-run.js';
import { JOB_ID_PATTERN, type FinalReport, type Journal, type JournalEntry } from './journal.js';
import type { LogShipperOptions } from './log-shipper.js';
import { runTriggerJob } from './run-trigger-job.js';
import type { JobFileTransfer } from '../files/job-file-transfer.js';
import type { StepLauncher } from '../exec/step-launcher.js';
import { afterPendingImmediates } from '../util/event-loop.js';
import { paramsProblem } from '../workflows/params-check.js';
import { parseDeployEvent } from './deploy-event.js';
import { saneJobAssignment } from './job-event.js';
import type { CountersWriter } from '../status/counters-writer.js';

export interface JobManagerOptions {
  stateDir: string;
  journal: Journal;
  outbox: Outbox;
  sender: ReportSender;
  /** Jobs the queue holds, the running one counted (JobQueue). */
  capacity: number;
  /** A workflow by name, or why it cannot run here. */
  workflows: {
    get(name: string): WorkflowDefinition | undefined;
    problemWith(name: string): string | null;
  };
  loadSecrets(): Promise<LoadedSecrets>;
  logger: Logger;
  defaultJobTimeoutMs: number | null;
  killGraceMs: number;
  logBatch?: LogShipperOptions;
  /** Called when the queue changes (status.json). */
  onQueueChange?(queue: Pick<JobQueue, 'running' | 'waiting'>): void;
  /** Downloads input files and uploads output files of jobs. */
  transfer?: JobFileTransfer;
  /**
   * Runs update jobs (`deploy` events) when their turn comes: the daemon hands in deploy/'s
   * runner. Absent: deploy events are ignored with a log line.
   */
  runUpdateJob?: RunJob;
  /** Starts the steps' processes; warmed again after each job (absent: steps are spawned directly). */
  launcher?: StepLauncher;
  /** Counts the jobs run, failed and rejected (docs/metrics.md, "Agent counters"). */
  counters?: Pick<CountersWriter, 'add'>;
  /**
   * A job found running at start is failed with `message` (interrupted): the deployment records
   * an update job's as the release's last failure, which it then reports (deploy/).
   */
  onInterrupted?(entry: JournalEntry, message: string): void;
}

/**
 * The agent's jobs: takes `job`, `deploy` and `cancel` events from the stream, keeps the journal,
 * runs accepted jobs one at a time through the queue and reports every move to the coordinator
 * through the report sender (which keeps undeliverable reports in the outbox).
 */
export class JobManager {
  readonly queue: JobQueue;
  readonly #finalPending = new Set<string>();
  readonly #kill = new AbortController();
  /** Aborted when the shutdown begins: a job that has not started by then never starts (JobStop). */
  readonly #shutdown = new AbortController();
  /** How each job of the queue is stopped on purpose (a cancel, the shutdown), from its turn to its end. */
  readonly #stops = new Map<string, JobStop>();
  /** Update jobs received with a start spread, not taken yet: their timers (onDeployEvent). */
  readonly #spread = new Map<string, NodeJS.Timeout>();
  #shuttingDown = false;

  /** What running a job needs: the same for every job. */
  readonly #deps: JobRunDeps;
  readonly #options: JobManagerOptions;

  constructor(options: JobManagerOptions) {
    this.#options = options;
    this.queue = new JobQueue(options.capacity, () => options.onQueueChange?.(this.queue));
    this.#deps = {
      stateDir: options.stateDir,
      journal: options.journal,
      send: (report) => options.sender.send(report),
      finish: (running, result) => this.#finish(running, result),
      workflow: (name) => options.workflows.get(name),
      loadSecrets: options.loadSecrets,
      logger: options.logger,
      defaultJobTimeoutMs: options.defaultJobTimeoutMs,
      killGraceMs: options.killGraceMs,
      ...(options.logBatch ? { logBatch: options.logBatch } : {}),
      ...(options.transfer ? { transfer: options.transfer } : {}),
      ...(options.launcher ? { launcher: options.launcher } : {}),
    };
  }

  /**
   * At daemon start: a job the journal says was running has no process any more: it ends
   * `failed` (interrupted). Results and refusals that never reached the coordinator are sent again.
   * `adopted` jobs are left alone: the self-update settles them (finishJob).
   */
  recover(adopted: ReadonlySet<string> = new Set()): void {
    const { journal } = this.#options;
    for (const entry of journal.all()) {
      if (adopted.has(entry.jobId)) continue;
      if (entry.state === 'running') {
        this.#failInterrupted(entry);
      } else if (entry.final && !entry.finalDelivered && !this.#options.outbox.has(entry.jobId, entry.final.kind)) {
        this.#sendFinal(entry.jobId, entry.final);
      }
    }
  }

  /**
   * Finishes a job the journal has `running` that no run of this process holds: an update job of
   * the agent's own binary, settled by the binary that started after it (self-update/). A job in
   * any other state is left as it is.
   */
  finishJob(jobId: string, result: JobResult): void {
    const entry = this.#options.journal.get(jobId);
    if (entry?.state === 'running') this.#finish(entry, result);
  }

  /**
   * A `job` event of the stream. An update job always takes the deploy path (its manifest is
   * checked). Optional fields the agent cannot use (a `timeoutMs` out of range) are set aside with
   * a warning, and the job runs without them (saneJobAssignment).
   */
  onJobEvent(event: JobAssignment): void {
    const assignment = this.#sane(event, 'job');
    if (assignment.kind === 'update') {
      this.onDeployEvent(assignment);
      return;
    }
    this.#intake(assignment, false);
  }

  /**
   * A `deploy` event of the stream: an update job. Taken into the queue like a job, except that
   * when the queue is full it is dropped with the log line `job queue full; rejecting` and not
   * reported (docs/agent.md): the coordinator keeps it pending and the pull fallback recovers it.
   * A new job whose event names `startWithinMs` (a publish to many devices) is taken at a random
   * moment within it, so that the fleet's starts, reports and downloads spread (docs/ota.md); a
   * cancel or the shutdown meanwhile drops it (the coordinator still has it).
   */
  onDeployEvent(data: unknown): void {
    const { logger } = this.#options;
    const parsed = parseDeployEvent(data);
    if (!parsed.ok) {
      logger.warn({ event: 'deploy' }, `ignored a deploy event: ${parsed.problem}`);
      return;
    }
    if (!this.#options.runUpdateJob) {
      logger.warn(
        { event: 'deploy', jobId: parsed.assignment.jobId },
        'ignored a deploy event: deployments are not set up',
      );
      return;
    }
    const { startWithinMs } = parsed;
    const assignment = this.#sane(parsed.assignment, 'deploy');
    const { journal } = this.#options;
    const known =
      journal.get(assignment.jobId) !== undefined ||
      journal.isDamaged(assignment.jobId) ||
      this.queue.has(assignment.jobId);
    if (startWithinMs === 0 || known) {
      const spread = this.#spread.get(assignment.jobId);
      if (spread) {
        // Sent again without a spread (a redelivery) while it waited: taken now, and only now.
        clearTimeout(spread);
        this.#spread.delete(assignment.jobId);
      }
      this.#intake(assignment, true);
      return;
    }
    if (this.#spread.has(assignment.jobId) || this.#shuttingDown) return;
    const delayMs = Math.floor(Math.random() * startWithinMs);
    logger.info(
      { event: 'deploy', jobId: assignment.jobId, delayMs },
      `update job received; taking it in ${(delayMs / 1000).toFixed(1)} s (the coordinator spreads a large publish over ${Math.ceil(startWithinMs / 1000)} s)`,
    );
    const timer = setTimeout(() => {
      this.#spread.delete(assignment.jobId);
      if (!this.#shuttingDown) this.#intake(assignment, true);
    }, delayMs);
    this.#spread.set(assignment.jobId, timer);
  }

  /**
   * A `cancel` event of the stream (docs/agent.md, "Cancelled jobs"): a user cancelled the job. A
   * waiting job leaves the queue and ends `cancelled` without starting; a running one is stopped
   * (its steps' process groups get SIGTERM, then SIGKILL after the workflow's `cancelGrace`) and
   * ends `cancelled`; its result is the confirmation the coordinator waits for. A job that already
   * ended here is left alone (its result, on its way or delivered, confirms the cancel), and one this
   * agent does not hold is confirmed with a `cancelled` result.
   */
  onCancelEvent(data: unknown): void {
    const { journal, logger } = this.#options;
    const jobId = (data as { jobId?: unknown } | null)?.jobId;
    if (typeof jobId !== 'string' || !JOB_ID_PATTERN.test(jobId)) {
      logger.warn({ event: 'cancel' }, 'ignored a cancel event without a usable job id');
      return;
    }
    const spread = this.#spread.get(jobId);
    if (spread) {
      clearTimeout(spread);
      this.#spread.delete(jobId);
    }
    const entry = journal.get(jobId);
    const log = logger.child({ jobId, ...(entry ? { workflow: entry.assignment.workflowName } : {}) });
    const stop = this.#stops.get(jobId);
    if (stop) {
      if (stop.cancelled) return;
      log.warn('cancel received: stopping the job');
      stop.cancel();
      return;
    }
    if (this.queue.take(jobId) || entry?.state === 'accepted') {
      log.warn('cancel received: the job will not run');
      this.#finish(entry!, cancelledResult(CANCELLED_BY_USER_BEFORE_START_MESSAGE));
      return;
    }
    if (entry) {
      log.debug(`cancel received for a job that already ended here (${entry.state}); nothing to stop`);
      return;
    }
    if (this.#finalPending.has(jobId) || this.#options.outbox.has(jobId, 'finish')) {
      // Sent again at every connect until confirmed: one confirmation on its way is enough.
      log.debug('cancel received for a job this agent does not hold; its confirmation is on its way already');
      return;
    }
    log.info(`cancel received for a job this agent does not hold; confirming it`);
    this.#sendFinal(jobId, { kind: 'finish', body: cancelledResult(CANCELLED_NOT_HELD_MESSAGE) });
  }

  /** The applications whose update job is queued or running here. */
  deployingApplications(): Set<string> {
    const ids = new Set<string>();
    for (const job of [...this.queue.waiting, ...(this.queue.running ? [this.queue.running] : [])]) {
      const assignment = this.#options.journal.get(job.jobId)?.assignment as { applicationId?: unknown } | undefined;
      if (typeof assignment?.applicationId === 'string') ids.add(assignment.applicationId);
    }
    return ids;
  }

  /** The assignment with what the agent cannot use of it set aside (saneJobAssignment), each said. */
  #sane<T extends JobAssignment>(received: T, event: 'job' | 'deploy'): T {
    const { assignment, problems } = saneJobAssignment(received);
    for (const problem of problems)
      this.#options.logger.warn(
        { event, jobId: String(received.jobId), workflow: String(received.workflowName) },
        `in the ${event} event of job ${String(received.jobId)}, ${problem}`,
      );
    return assignment;
  }

  #intake(assignment: JobAssignment, deploy: boolean): void {
    const { journal, logger } = this.#options;
    if (!JOB_ID_PATTERN.test(assignment.jobId)) {
      logger.error({ jobId: String(assignment.jobId) }, 'ignored a job event with an unusable job id');
      return;
    }
    const log = logger.child({ jobId: assignment.jobId, workflow: assignment.workflowName });
    const entry = journal.get(assignment.jobId);
    const decision = decideIntake(assignment, {
      entry,
      damaged: journal.isDamaged(assignment.jobId),
      active: this.queue.has(assignment.jobId),
      finalPending:
        this.#finalPending.has(assignment.jobId) ||
        (entry?.final ? this.#options.outbox.has(assignment.jobId, entry.final.kind) : false),
      shuttingDown: this.#shuttingDown,
      queueFull: this.queue.isFull,
      capacity: this.queue.capacity,
      // An update job is checked when it runs, against the signed manifest entry whose values its
      // workflow gets (run-deploy-job.ts): a workflow missing here fails it, params the workflow
      // file refuses refuse it, before anything is downloaded or run. A rejection here would not
      // be reported, and the coordinator would send the job again.
      workflowProblem: deploy ? null : this.#options.workflows.problemWith(assignment.workflowName),
      paramsProblem: deploy
        ? null
        : paramsProblem(this.#options.workflows.get(assignment.workflowName), assignment.params),
    });
    try {
      switch (decision.action) {
        case 'ignore':
          log.debug(`job event ignored: ${decision.why}`);
          return;
        case 'accept': {
          const startsNow = this.queue.running === null && this.queue.waiting.length === 0;
          // Queued, it is promised to the coordinator by the `accept` below: on disk first. Started
          // at once, nothing is promised before beginAcceptedJob's durable `running` write, the
          // first one of its entry.
          const created = journal.create(assignment, 'accepted', {}, { onDisk: !startsNow });
          if (startsNow) {
            // It starts at once: `start` alone moves it from pending to running (one round trip less).
            log.info('job received; starting it now');
            this.#enqueue(created, Promise.resolve({ outcome: 'stored' }));
            return;
          }
          this.#enqueue(created, this.#options.sender.send({ kind: 'accept', jobId: assignment.jobId }));
          log.info(
            `job accepted into the queue (${this.queue.waiting.length} waiting, capacity ${this.queue.capacity})`,
          );
          return;
        }
        case 'reject': {
          if (deploy) {
            // Not reported: the coordinator keeps the job pending (docs/agent.md).
            if (decision.reason === 'queue_full') log.warn({ event: 'deploy' }, 'job queue full; rejecting');
            else log.info({ event: 'deploy' }, `deploy event left for later: ${decision.message}`);
            return;
          }
          const final: FinalReport = { kind: 'reject', body: { reason: decision.reason, message: decision.message } };
          journal.create(assignment, 'rejected', { final });
          this.#options.counters?.add('jobsRejected');
          if (decision.reason === 'queue_full') log.warn('job queue full; rejecting');
          else log.warn(`job rejected (${decision.reason}): ${decision.message}`);
          this.#sendFinal(assignment.jobId, final);
          return;
        }
        case 'requeue': {
          const accepted: Promise<SendOutcome> =
            assignment.status === 'pending' && !this.#options.outbox.has(assignment.jobId, 'accept')
              ? this.#options.sender.send({ kind: 'accept', jobId: assignment.jobId })
              : Promise.resolve({ outcome: 'stored' });
          this.#enqueue(entry!, accepted);
          log.info('job accepted before the agent restarted: queued again');
          return;
        }
        case 'fail_lost': {
          log.warn(`${LOST_MESSAGE} (the coordinator has it ${assignment.status})`);
          this.#finish(journal.create(assignment, 'finished'), failedResult(LOST_MESSAGE));
          return;
        }
        case 'fail_interrupted':
          this.#failInterrupted(entry!);
          return;
        case 'fail_damaged':
          log.warn(DAMAGED_MESSAGE);
          this.#finish(journal.create(assignment, 'finished'), failedResult(DAMAGED_MESSAGE));
          return;
        case 'resend_final':
          log.info('sending the job result again');
          this.#sendFinal(assignment.jobId, entry!.final!);
          return;
      }
    } catch (error) {
      // The journal could not be written: promise nothing; the job is delivered again on reconnect.
      log.error({ err: error }, 'cannot record the job in the journal; it is left for a later delivery');
    }
  }

  /**
   * Graceful shutdown: no new job is taken; waiting jobs end `cancelled`; the running job may
   * finish within `graceMs`, after which its steps are killed and it ends `cancelled`.
   */
  async shutdown(graceMs: number): Promise<void> {
    const { journal, logger } = this.#options;
    this.#shuttingDown = true;
    for (const timer of this.#spread.values()) clearTimeout(timer);
    this.#spread.clear();
    for (const job of this.queue.takeWaiting()) {
      const entry = journal.get(job.jobId);
      if (entry) this.#endNotStarted(entry);
    }
    // The running job, if it has not started (its start may wait for the coordinator's answer),
    // ends as the waiting ones do, at once, rather than holding the stop for the grace (#enqueue).
    this.#shutdown.abort(CANCELLED_BEFORE_START_MESSAGE);
    const running = this.queue.running;
    if (running && journal.get(running.jobId)?.state !== 'accepted') {
      logger.info(
        { jobId: running.jobId, workflow: running.workflowName },
        `waiting up to ${formatDuration(graceMs)} for the running job to finish`,
      );
      let timer: NodeJS.Timeout | undefined;
      const graceOver = new Promise<'grace'>((resolve) => {
        timer = setTimeout(() => resolve('grace'), graceMs);
      });
      const first = await Promise.race([this.queue.onIdle().then(() => 'idle' as const), graceOver]);
      clearTimeout(timer);
      if (first === 'grace') {
        logger.warn(
          { jobId: running.jobId, workflow: running.workflowName },
          `the running job did not finish within ${formatDuration(graceMs)}; stopping it`,
        );
        this.#kill.abort(
          `cancelled: the agent shut down and the job did not finish within the ${formatDuration(graceMs)} grace period`,
        );
      }
    }
    await this.queue.onIdle();
  }

  /** Ends a job the shutdown took before it started: `cancelled`, and says so in the log. */
  #endNotStarted(entry: JournalEntry): void {
    const { jobId, assignment } = entry;
    this.#options.logger.info({ jobId, workflow: assignment.workflowName }, CANCELLED_BEFORE_START_MESSAGE);
    this.#finish(entry, cancelledResult(CANCELLED_BEFORE_START_MESSAGE));
  }

  /** Kills the running step at once (a second signal). */
  killNow(): void {
    this.#kill.abort('cancelled: the agent was stopped at once');
  }

  get shuttingDown(): boolean {
    return this.#shuttingDown;
  }

  #enqueue(entry: JournalEntry, accepted: Promise<SendOutcome>): void {
    const options = this.#options;
    const deps = this.#deps;
    const run = (entry.assignment.kind === 'update' && options.runUpdateJob) || runTriggerJob;
    this.queue.add({ jobId: entry.jobId, workflowName: entry.assignment.workflowName }, () => {
      const stop = new JobStop(this.#kill.signal, this.#shutdown.signal, options.killGraceMs);
      this.#stops.set(entry.jobId, stop);
      return run(deps, entry, accepted, stop)
        .catch((error: unknown) => {
          options.logger.error({ err: error, jobId: entry.jobId }, 'the job failed inside the agent');
          const current = options.journal.get(entry.jobId);
          if (current && current.state === 'running')
            this.#finish(current, failedResult(`the agent failed: ${(error as Error).message}`));
        })
        .finally(() => {
          this.#stops.delete(entry.jobId);
          // Cancelled, or the agent shut down, before its start was reported: it never ran, and ends here.
          const current = options.journal.get(entry.jobId);
          if (current?.state !== 'accepted') return;
          if (stop.cancelled) this.#finish(current, cancelledResult(CANCELLED_BY_USER_BEFORE_START_MESSAGE));
          else if (this.#shuttingDown) this.#endNotStarted(current);
        })
        .finally(() => {
          // Ready for the next job once the result is on the wire.
          if (!this.#shuttingDown) void afterPendingImmediates().then(() => this.prepareNext());
        });
    });
  }

  /**
   * Makes ready, while the agent is idle, what the next job would otherwise make before its first
   * step: a spare process for the step (StepLauncher.warm: the fork blocks the event loop a
   * moment) and the job's directory with its files (makeSpareJobDir, on the thread pool).
   */
  prepareNext(): Promise<void> {
    if (this.#shuttingDown) return Promise.resolve();
    this.#options.launcher?.warm();
    return makeSpareJobDir(this.#options.stateDir);
  }

  /** A job marked running that no process of this agent runs: kill its leftovers, report it failed. */
  #failInterrupted(entry: JournalEntry): void {
    const fields = { jobId: entry.jobId, workflow: entry.assignment.workflowName };
    this.#options.logger.warn(fields, INTERRUPTED_MESSAGE);
    if (entry.processGroup) {
      const killed = killOrphanedStep(entry.processGroup, entry.jobId);
      if (killed > 0)
        this.#options.logger.warn(fields, `killed ${killed} process(es) the interrupted job left running`);
    }
    this.#options.onInterrupted?.(entry, INTERRUPTED_MESSAGE);
    const final = this.#record(entry, failedResult(INTERRUPTED_MESSAGE), false);
    void this.#countInterrupted(entry, this.#send(entry.jobId, final));
  }

  /**
   * Counts an interrupted job by the coordinator's answer to its result. Taken: a run that failed.
   * Refused because the coordinator already has a result: the job ended before the agent stopped,
   * and only its journal entry did not say so (the disk was full when it ended: #record); it was
   * counted when it ended, and is not counted as a failure it was not (a coordinator's deadline
   * that ended it meanwhile is not counted either). Never delivered before the agent stops: not
   * counted.
   */
  async #countInterrupted(entry: JournalEntry, sent: Promise<SendOutcome>): Promise<void> {
    let outcome: SendOutcome;
    try {
      outcome = await sent;
      if (outcome.outcome === 'stored') {
        if (!outcome.delivery) return;
        outcome = await outcome.delivery;
      }
    } catch {
      return; // the sender failed: the crash handler has it
    }
    if (outcome.outcome === 'delivered') {
      this.#options.counters?.add('jobsRun');
      this.#options.counters?.add('jobsFailed');
      return;
    }
    if (outcome.outcome !== 'dropped') return;
    const details = (outcome.answer?.body as { details?: { status?: unknown } } | undefined)?.details;
    if (outcome.answer?.status !== 409 || typeof details?.status !== 'string') return;
    this.#options.logger.info(
      { jobId: entry.jobId, workflow: entry.assignment.workflowName, status: details.status },
      `the job was not interrupted: it had ended (${details.status}) and the coordinator has its result; ` +
        'only its journal entry had not been written (the disk was full?)',
    );
  }

  /** Records the job's result in the journal, then reports it. A job that was running counts as run. */
  #finish(entry: JournalEntry, result: JobResult): void {
    this.#sendFinal(entry.jobId, this.#record(entry, result));
  }

  /**
   * Records the job's result in the journal (a job that was running counts as run, unless `count`
   * is false: the caller counts it). A result the journal cannot take (a full disk) is kept in
   * memory: it is still reported, and the job's next write (the delivered mark) records it.
   */
  #record(entry: JournalEntry, result: JobResult, count = true): FinalReport {
    if (entry.state === 'running' && count) {
      this.#options.counters?.add('jobsRun');
      if (result.status === 'failed' || result.status === 'timed_out') this.#options.counters?.add('jobsFailed');
    }
    const final: FinalReport = { kind: 'finish', body: result };
    const patch = { state: 'finished', final, finalDelivered: false } as const;
    try {
      this.#options.journal.update(entry.jobId, patch);
    } catch (error) {
      if (this.#options.journal.get(entry.jobId)) this.#options.journal.remember(entry.jobId, patch);
      this.#options.logger.error({ err: error, jobId: entry.jobId }, 'cannot record the job result in the journal');
    }
    return final;
  }

  #sendFinal(jobId: string, final: FinalReport): void {
    void this.#send(jobId, final);
  }

  #send(jobId: string, final: FinalReport): Promise<SendOutcome> {
    this.#finalPending.add(jobId);
    const report = { jobId, ...final } as Report;
    const sent = this.#options.sender.send(report);
    void sent.finally(() => this.#finalPending.delete(jobId));
    return sent;
  }
}

/** The result of a job that ended `cancelled` without a step's exit code. */
function cancelledResult(message: string): JobResult {
  return { ...failedResult(message), status: 'cancelled' };
}

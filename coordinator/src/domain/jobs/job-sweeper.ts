import type { JobRepository } from '../model/jobs.js';
import { isoNow, type Clock } from '../../util/clock.js';
import { FailureLog, type FailureLogger } from '../../util/failure-log.js';
import type { JobEvents } from './job-events.js';
import { CANCEL_UNCONFIRMED_MESSAGE, DEADLINE_MESSAGE, REVOKED_MESSAGE } from './job-state.js';

export interface JobSweeperOptions {
  jobs: JobRepository;
  jobEvents: JobEvents;
  clock: Clock;
  logger: FailureLogger;
  /** DROVER_JOB_DEADLINE_GRACE_MS: also the delay before the first sweep after a start. */
  deadlineGraceMs: number;
  /** Run after each pass: the batches' course caught up (domain/fleet/batch-service.ts). */
  alsoSweep?: () => Promise<void>;
}

/** How often the sweep runs: every few seconds, more often when the grace is short (tests). */
export function sweepIntervalMs(deadlineGraceMs: number): number {
  return Math.min(5_000, Math.max(100, Math.floor(deadlineGraceMs / 2)));
}

/**
 * Fails jobs that can no longer get a result (docs/jobs.md): queued or running jobs past their
 * deadline, and every open job of a revoked agent (at its revocation, and at each pass for a job
 * stored after it). A running job whose cancel its agent did not
 * confirm by its (brought forward) deadline becomes `cancelled` instead. Each failure is a terminal transition made
 * once (conditional UPDATE); the sync waits on those jobs are woken after the commit.
 *
 * The first sweep waits one grace period after the coordinator starts, so that agents can
 * reconnect and deliver results they kept while it was down before their jobs are judged late.
 */
export class JobSweeper {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> = Promise.resolve();
  private stopped = false;
  private readonly failures: FailureLog;

  constructor(private readonly options: JobSweeperOptions) {
    this.failures = new FailureLog(options.logger, 'deadline sweep failed', () => options.clock.now());
  }

  start(): void {
    const interval = sweepIntervalMs(this.options.deadlineGraceMs);
    const tick = () => {
      this.running = this.sweep().finally(() => {
        if (this.stopped) return;
        this.timer = setTimeout(tick, interval);
        this.timer.unref();
      });
    };
    this.timer = setTimeout(tick, Math.max(this.options.deadlineGraceMs, interval));
    this.timer.unref();
  }

  /** One pass; returns the ids of the jobs it ended. */
  async sweep(): Promise<string[]> {
    if (this.stopped) return [];
    try {
      const now = isoNow(this.options.clock);
      const cancelled = await this.options.jobs.cancelOverdue(now, CANCEL_UNCONFIRMED_MESSAGE);
      this.finished(cancelled, 'job cancelled: its agent did not confirm the cancel before its deadline');
      const failed = await this.options.jobs.failOverdue(now, DEADLINE_MESSAGE);
      this.finished(failed, 'job failed: no result before its deadline');
      // A call that selected an agent a moment before its revocation (agentRevoked below) stores
      // a job no agent will ever take: it would hold its batch's place, and keep it open, for good.
      const orphaned = await this.options.jobs.failOpenOfRevoked(REVOKED_MESSAGE, now);
      this.finished(orphaned, 'job failed: its agent was revoked');
      await this.options.alsoSweep?.();
      this.failures.succeeded();
      return [...cancelled, ...failed, ...orphaned];
    } catch (error) {
      this.failures.failed(error);
      return [];
    }
  }

  /** The agent was revoked: its open jobs will never run or report; they fail now. */
  async agentRevoked(agentId: string): Promise<string[]> {
    if (this.stopped) return [];
    try {
      const failed = await this.options.jobs.failOpenOfAgent(agentId, REVOKED_MESSAGE, isoNow(this.options.clock));
      this.finished(failed, 'job failed: its agent was revoked');
      return failed;
    } catch (error) {
      this.options.logger.error({ err: error, agentId }, 'could not fail the jobs of a revoked agent');
      return [];
    }
  }

  /** Stops the timer and waits for a sweep in progress. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running.catch(() => undefined);
  }

  private finished(jobIds: readonly string[], msg: string): void {
    for (const jobId of jobIds) {
      this.options.logger.info({ jobId }, msg);
      this.options.jobEvents.jobFinished(jobId);
    }
  }
}

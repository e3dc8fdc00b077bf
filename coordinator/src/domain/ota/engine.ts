import type { JobAssignment } from '@drover/shared';
import type {
  DeviceBindingRepository,
  EvaluationOutcome,
  EvaluationRequest,
  EvaluationReason,
} from '../model/device-bindings.js';
import type { Job } from '../model/jobs.js';
import { batchLoader } from '../../util/batch-loader.js';
import { isoNow, type Clock } from '../../util/clock.js';
import { FailureLog } from '../../util/failure-log.js';
import type { JobEvents } from '../jobs/job-events.js';
import { noMetrics, type Metrics } from '../metrics.js';
import { toDeployAssignment } from './deploy-job.js';
import type { UpdateSpread } from './update-spread.js';

export interface OtaEngineOptions {
  bindings: DeviceBindingRepository;
  jobEvents: JobEvents;
  clock: Clock;
  logger: {
    debug(obj: object, msg: string): void;
    info(obj: object, msg: string): void;
    error(obj: object, msg: string): void;
  };
  /** How often the retry sweep runs. */
  sweepIntervalMs: number;
  /** Counts the update jobs issued (docs/metrics.md); none by default. */
  metrics?: Metrics;
  /** Spreads the starts of the jobs of large evaluations (update-spread.ts); none: never spread. */
  spread?: UpdateSpread;
}

/** Bindings evaluated per transaction: a publish to many devices yields to other work between chunks. */
export const EVALUATION_CHUNK = 250;
const SWEEP_BATCH = 1_000;

/**
 * Runs evaluations of device bindings (domain/ota/evaluation.ts, docs/ota.md) and what follows
 * their commit: a created or re-pushed update job is announced to the agent's stream
 * (`jobEvents.jobCreated`: the stream sends it as a `deploy` event), a superseded one is
 * announced as finished. It also listens for update jobs that end, and sweeps bindings whose
 * retry is due. Reachable as `ctx.ota`.
 */
export class OtaEngine {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> = Promise.resolve();
  private stopped = false;
  private unsubscribe: (() => void) | undefined;
  /** The application of each update job being sent: those of one turn of the event loop in one read. */
  private readonly applicationOf: (jobId: string) => Promise<string | undefined>;
  private readonly sweepFailures: FailureLog;

  constructor(private readonly options: OtaEngineOptions) {
    this.sweepFailures = new FailureLog(options.logger, 'OTA retry sweep failed', () => options.clock.now());
    this.applicationOf = batchLoader(
      async (ids) =>
        new Map((await options.bindings.applicationsOfUpdateJobs(ids)).map((r) => [r.jobId, r.applicationId])),
    );
  }

  /** Subscribes to job ends and starts the retry sweep. */
  start(): void {
    this.unsubscribe = this.options.jobEvents.onJobFinished((jobId) => void this.jobEnded(jobId));
    const tick = () => {
      this.running = this.sweep().finally(() => {
        if (this.stopped) return;
        this.timer = setTimeout(tick, this.options.sweepIntervalMs);
        this.timer.unref();
      });
    };
    this.timer = setTimeout(tick, this.options.sweepIntervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.unsubscribe?.();
    clearTimeout(this.timer);
    await this.running.catch(() => undefined);
  }

  /** Evaluates bindings (in chunks of EVALUATION_CHUNK transactions) and announces the jobs. */
  async evaluate(requests: readonly EvaluationRequest[]): Promise<EvaluationOutcome[]> {
    const outcomes: EvaluationOutcome[] = [];
    const spreadMs = this.options.spread?.of(requests.length) ?? 0;
    for (let i = 0; i < requests.length; i += EVALUATION_CHUNK) {
      if (i > 0) await new Promise<void>((resolve) => setImmediate(resolve));
      const chunk = await this.options.bindings.evaluate(
        requests.slice(i, i + EVALUATION_CHUNK),
        this.options.clock.now(),
      );
      for (const outcome of chunk) this.announce(outcome, spreadMs);
      outcomes.push(...chunk);
    }
    const issued = outcomes.filter((o) => o.createdJobId !== null).length;
    if (issued > 0) this.options.logger.info({ evaluated: outcomes.length, issued }, 'update jobs issued');
    return outcomes;
  }

  async evaluateIds(ids: readonly string[], reason: EvaluationReason): Promise<EvaluationOutcome[]> {
    return this.evaluate(ids.map((bindingId) => ({ bindingId, reason })));
  }

  /** An update job reached a terminal status: its binding settles it and may get the next job. */
  async jobEnded(jobId: string): Promise<void> {
    if (this.stopped) return;
    try {
      const bindingId = await this.options.bindings.bindingOfActiveJob(jobId);
      if (bindingId) await this.evaluateIds([bindingId], 'job_end');
    } catch (error) {
      this.options.logger.error({ err: error, jobId }, 'could not settle the end of an update job');
    }
  }

  /** One pass of the retry sweep; returns how many bindings were evaluated. */
  async sweep(): Promise<number> {
    if (this.stopped) return 0;
    try {
      const ids = await this.options.bindings.idsDue(isoNow(this.options.clock), SWEEP_BATCH);
      if (ids.length > 0) await this.evaluateIds(ids, 'sweep');
      this.sweepFailures.succeeded();
      return ids.length;
    } catch (error) {
      this.sweepFailures.failed(error);
      return 0;
    }
  }

  /** The `deploy` event's data for an update job: its assignment plus the application id (and, at its first send, the `startWithinMs` of a large evaluation's job). */
  async withDeployFields(job: Job, assignment: JobAssignment): Promise<JobAssignment> {
    if (job.kind !== 'update') return assignment;
    const applicationId = await this.applicationOf(job.id);
    if (!applicationId) return assignment;
    return toDeployAssignment(assignment, applicationId, this.options.spread?.take(job.id) ?? 0);
  }

  private announce(outcome: EvaluationOutcome, spreadMs: number): void {
    const binding = outcome.binding;
    if (!binding) return;
    if (outcome.supersededJobId) {
      this.options.logger.debug({ bindingId: binding.id, jobId: outcome.supersededJobId }, 'update job superseded');
      this.options.jobEvents.jobFinished(outcome.supersededJobId);
    }
    if (outcome.createdJobId) {
      this.options.logger.debug(
        { bindingId: binding.id, jobId: outcome.createdJobId, releaseId: outcome.state?.desired?.id },
        'update job issued',
      );
      this.options.spread?.issued(outcome.createdJobId, spreadMs);
      this.options.jobEvents.jobCreated(binding.agentId, outcome.createdJobId);
      (this.options.metrics ?? noMetrics).jobCreated('ota', 'pending');
    }
    if (outcome.repushJobId) this.options.jobEvents.jobResent(binding.agentId, outcome.repushJobId);
  }
}

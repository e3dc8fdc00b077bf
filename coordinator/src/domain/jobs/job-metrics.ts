import { isTerminalJobStatus } from '@drover/shared';
import type { JobEvents } from './job-events.js';
import { secondsBetween, type Metrics } from '../metrics.js';
import type { JobRepository } from '../model/jobs.js';

export interface JobMetricsOptions {
  jobEvents: JobEvents;
  jobs: Pick<JobRepository, 'findById'>;
  metrics: Metrics;
  logger: { error(obj: object, msg: string): void };
}

/**
 * The figures of jobs that start and end (docs/metrics.md): every start and every end already
 * goes through JobEvents after its commit, whoever made it (an agent's report, a user's cancel,
 * the deadline sweep, a revocation, an OTA evaluation), so that is where they are observed. An
 * end carries only the job id: its status and instants are read from the database, off the
 * path of the request that ended it. Returns the function that stops observing.
 */
export function observeJobMetrics({ jobEvents, jobs, metrics, logger }: JobMetricsOptions): () => void {
  const offStarted = jobEvents.onJobStarted((job) => {
    if (job.startedAt !== null) metrics.jobStarted(secondsBetween(job.createdAt, job.startedAt));
  });
  const offFinished = jobEvents.onJobFinished((jobId) => {
    jobs.findById(jobId).then(
      (job) => {
        if (!job || !isTerminalJobStatus(job.status)) return;
        const ran = job.startedAt !== null && job.finishedAt !== null;
        metrics.jobFinished(job.status, ran ? secondsBetween(job.startedAt!, job.finishedAt!) : null);
      },
      (error: unknown) => logger.error({ err: error, jobId }, 'could not read an ended job for its metrics'),
    );
  });
  return () => {
    offStarted();
    offFinished();
  };
}

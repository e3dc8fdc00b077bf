import { JOB_STATUSES, type JobStatus } from '@drover/shared';
import type { Schema } from '@drover/shared/api';
import { CliError } from '../errors.js';
import { CLI_VERSION } from '../version.js';

/** A log line of a job (`GET /v1/jobs/:id`). */
export type LogLine = Schema<'JobLogLine'>;

/** The fields a coordinator older than this command line may leave out of a job (`number`, paged logs). */
type Newer<T, K extends keyof T> = Omit<T, K> & Partial<Pick<T, K>>;

/** A job (`GET /v1/jobs/:id`, the job list). */
export type Job = Newer<Schema<'Job'>, 'number'>;

/** A job with a page of its log (`logsAfter`, `logsLimit`). */
export type JobDetail = Newer<Schema<'JobDetail'>, 'number' | 'logsMore' | 'logsTotal' | 'logsDropped'>;

/** The most lines the API answers at once (`logsLimit`). */
export const LOG_PAGE = 5000;

/** Whether lines follow a page read with `logsLimit` = `limit`. */
export const moreLogsAfter = (page: JobDetail, limit: number): boolean => page.logsMore ?? page.logs.length === limit;

/** What a trigger run answers: 202 the job accepted (async), or 200 its result (sync; `timedOut` when the wait ran out). */
export type RunAccepted = Schema<'RunAccepted'>;
export type RunResult = Schema<'RunResult'>;

export const jobPath = (jobId: string) => `/jobs/${encodeURIComponent(jobId)}`;

/** Whether `status` is a job status this command line knows. */
export const isKnownJobStatus = (status: unknown): status is JobStatus =>
  typeof status === 'string' && (JOB_STATUSES as readonly string[]).includes(status);

/**
 * `status` as a job status this command line knows; else an error (exit 2) that says so: an
 * answer without one is not a job, one it does not know comes from a newer coordinator.
 */
export function knownJobStatus(status: unknown, what: string): JobStatus {
  if (isKnownJobStatus(status)) return status;
  if (typeof status !== 'string' || status === '') {
    throw new CliError(
      `the coordinator's answer gives no status for ${what}: it is not Drover's API, or not one this drover reads`,
    );
  }
  throw new CliError(
    `the coordinator reported status ${JSON.stringify(status)} for ${what}, which this drover (${CLI_VERSION}) does not know: upgrade the CLI`,
  );
}

/** A job as read by `GET /v1/jobs/:id`, its id and status checked (knownJobStatus). */
export function checkedJob<T extends { id?: unknown; status?: unknown }>(job: T, jobId: string): T {
  if (typeof job !== 'object' || job === null || Array.isArray(job)) {
    throw new CliError(`the coordinator's answer for job ${jobId} is not a job: it is not Drover's API`);
  }
  knownJobStatus(job.status, `job ${jobId}`);
  return job;
}

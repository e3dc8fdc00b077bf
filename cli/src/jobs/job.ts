import type { Schema } from '@drover/shared/api';

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

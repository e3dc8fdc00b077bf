import type { JobStatus } from '@drover/shared';

/** A log line of a job (`GET /v1/jobs/:id`). */
export interface LogLine {
  seq: number;
  at: string;
  stream: 'stdout' | 'stderr' | 'system';
  step: number | null;
  text: string;
}

/** The fields of a job the command line shows (`GET /v1/jobs/:id`, the job list). */
export interface Job {
  id: string;
  number?: number;
  kind: 'trigger' | 'update';
  source: string;
  status: JobStatus;
  triggerId: string | null;
  agentId: string;
  workflowName: string;
  ref: string | null;
  params: Record<string, unknown>;
  output: Record<string, unknown> | null;
  exitCode: number | null;
  errorMessage: string | null;
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
  cancelRequestedAt: string | null;
}

export interface JobDetail extends Job {
  /** A page of the log (`logsAfter`, `logsLimit`). */
  logs: LogLine[];
  /** More lines follow the page (absent from a coordinator older than paged logs). */
  logsMore?: boolean;
  /** Lines stored, and lines the coordinator's cap dropped from the middle of the log. */
  logsTotal?: number;
  logsDropped?: number;
}

/** The most lines the API answers at once (`logsLimit`). */
export const LOG_PAGE = 5000;

/** Whether lines follow a page read with `logsLimit` = `limit`. */
export const moreLogsAfter = (page: JobDetail, limit: number): boolean => page.logsMore ?? page.logs.length === limit;

/** What a trigger run answers (202 async, 200 sync; `timedOut` when a sync wait ran out). */
export interface RunAnswer {
  jobId: string;
  status: JobStatus;
  statusUrl: string;
  exitCode?: number | null;
  errorMessage?: string | null;
  output?: Record<string, unknown>;
  timedOut?: boolean;
  idempotent?: boolean;
}

export const jobPath = (jobId: string) => `/jobs/${encodeURIComponent(jobId)}`;

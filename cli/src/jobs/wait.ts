import { pause } from '@drover/agent/client';
import { isTerminalJobStatus } from '@drover/shared';
import { Interrupted } from '../errors.js';
import type { Api } from '../http/api.js';
import { jobPath, LOG_PAGE, moreLogsAfter, type JobDetail, type LogLine } from './job.js';

/** The first pause between two looks at the job, growing by half each time up to the longest. */
const FIRST_PAUSE_MS = 250;
const LONGEST_PAUSE_MS = 2000;

export interface WaitOptions {
  signal: AbortSignal;
  /** Stop waiting after this long (the job runs on). */
  timeoutMs?: number;
  /** Called with each new batch of log lines, in order; without it no log line is read. */
  onLogs?(lines: LogLine[]): void;
  /** Called when the job's status changes (not for the first look). */
  onStatus?(job: JobDetail): void;
}

export interface WaitEnd {
  /** The job as last seen. */
  job: JobDetail;
  /** `finished`: a terminal status; `timeout` or `interrupted`: the wait ended first. */
  ended: 'finished' | 'timeout' | 'interrupted';
}

/**
 * Follows a job through `GET /v1/jobs/:id` (a session) until it reaches a terminal status, the
 * timeout passes or `signal` aborts; with `onLogs`, its log lines as they come, page by page. The
 * API has no stream of job events, so this looks again after a pause that starts short (most jobs
 * are quick) and grows to 2 s, and shortens again when something moved.
 */
export async function waitForJob(api: Api, jobId: string, options: WaitOptions): Promise<WaitEnd> {
  const deadline = options.timeoutMs === undefined ? Infinity : Date.now() + options.timeoutMs;
  let lastSeq = 0;
  let wait = FIRST_PAUSE_MS;
  let job: JobDetail | undefined;
  for (;;) {
    let seen: JobDetail;
    try {
      seen = await readJob(api, jobId, lastSeq, options.onLogs ? LOG_PAGE : 0);
    } catch (error) {
      if (error instanceof Interrupted && job) return { job, ended: 'interrupted' };
      throw error;
    }
    let moved = false;
    if (options.onLogs && seen.logs.length > 0) {
      options.onLogs(seen.logs);
      lastSeq = seen.logs[seen.logs.length - 1]!.seq;
      moved = true;
    }
    if (job && seen.status !== job.status) {
      options.onStatus?.(seen);
      moved = true;
    }
    job = seen;
    // A page ends at LOG_PAGE lines or about 1 MiB of text: the API says whether more follow.
    const morePages = options.onLogs !== undefined && moreLogsAfter(seen, LOG_PAGE);
    if (morePages) continue;
    if (isTerminalJobStatus(seen.status)) return { job: seen, ended: 'finished' };
    if (Date.now() >= deadline) return { job: seen, ended: 'timeout' };
    wait = moved ? FIRST_PAUSE_MS : Math.min(LONGEST_PAUSE_MS, Math.round(wait * 1.5));
    try {
      await pause(Math.min(wait, Math.max(0, deadline - Date.now())), options.signal);
    } catch {
      return { job: seen, ended: 'interrupted' };
    }
  }
}

/** The job with its log lines after `logsAfter` (at most `logsLimit`). */
export function readJob(api: Api, jobId: string, logsAfter: number, logsLimit: number): Promise<JobDetail> {
  return api.get<JobDetail>(jobPath(jobId), { logsAfter, logsLimit });
}

import { pause } from '@drover/agent/client';
import { isTerminalJobStatus } from '@drover/shared';
import { Api } from '../http/api.js';
import { answerTimeoutBefore, lookDuringWait } from '../http/outage.js';
import { checkedJob, jobPath, LOG_PAGE, moreLogsAfter, type JobDetail, type LogLine } from './job.js';

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
  /** Told when the coordinator stops answering for a while, and when it answers again (one line each). */
  onOutage?(message: string): void;
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
 * are quick) and grows to 2 s, and shortens again when something moved. An outage of the
 * coordinator (no answer, a 502, 503 or 504) is waited out until the deadline (http/outage.ts);
 * a status this command line does not know ends the wait with an error (exit 2).
 */
export async function waitForJob(api: Api, jobId: string, options: WaitOptions): Promise<WaitEnd> {
  const deadline = options.timeoutMs === undefined ? Infinity : Date.now() + options.timeoutMs;
  let lastSeq = 0;
  let wait = FIRST_PAUSE_MS;
  let job: JobDetail | undefined;
  for (;;) {
    const looked = await lookDuringWait(
      () => readJob(api, jobId, lastSeq, options.onLogs ? LOG_PAGE : 0, answerTimeoutBefore(deadline)),
      job,
      `job ${jobId}`,
      { signal: options.signal, deadline, onOutage: options.onOutage },
    );
    if ('ended' in looked) return { job: job!, ended: looked.ended };
    const seen = looked.seen;
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

/**
 * The job with its log lines after `logsAfter` (at most `logsLimit`), its status checked: one
 * this command line does not know is an error (exit 2) that says to upgrade it.
 */
export async function readJob(
  api: Api,
  jobId: string,
  logsAfter: number,
  logsLimit: number,
  answerTimeoutMs?: number,
): Promise<JobDetail> {
  const query = { logsAfter, logsLimit };
  const answer = await api.call<JobDetail>('GET', jobPath(jobId), { query, answerTimeoutMs });
  return checkedJob(answer.body, jobId);
}

/** How long the last look at a job after its wait may take. */
const LAST_LOOK_MS = 5_000;

/**
 * The job once a wait for it ended, for `--json`: read again as the API answers it (`query`), at
 * most 5 s, even after an interruption (then with a signal of its own); what the wait saw last
 * when that look gets no answer (the wait timed out in an outage, say).
 */
export async function jobAfterWait(api: Api, end: WaitEnd, query?: Record<string, number>): Promise<unknown> {
  const lastLook =
    end.ended === 'interrupted'
      ? new Api(api.origin, api.bearer, AbortSignal.timeout(LAST_LOOK_MS), api.dispatcher)
      : api;
  try {
    return (await lastLook.call('GET', jobPath(end.job.id), { query, answerTimeoutMs: LAST_LOOK_MS })).body;
  } catch {
    return end.job;
  }
}

import { pause } from '@drover/agent/client';
import { isTerminalJobStatus } from '@drover/shared';
import type { Api } from '../http/api.js';
import { answerTimeoutBefore, lookDuringWait } from '../http/outage.js';
import { batchEnded, batchPath, type BatchDetail, type BatchJob } from './batch.js';

/** The first pause between two looks at the batch, growing by half each time up to the longest (as for a job). */
const FIRST_PAUSE_MS = 250;
const LONGEST_PAUSE_MS = 2000;

export interface BatchWaitOptions {
  signal: AbortSignal;
  /** Stop waiting after this long (the jobs run on). */
  timeoutMs?: number;
  /** Called with the jobs seen to end since the last look (the first look: those ended already), in the batch's order. */
  onJobsEnded?(jobs: BatchJob[], batch: BatchDetail): void;
  /** Told when the coordinator stops answering for a while, and when it answers again (one line each). */
  onOutage?(message: string): void;
}

export interface BatchWaitEnd {
  /** The batch as last seen, as the API answered it. */
  batch: BatchDetail;
  /** `finished`: every job ended; `timeout` or `interrupted`: the wait ended first. */
  ended: 'finished' | 'timeout' | 'interrupted';
}

/**
 * Follows a batch through `GET /v1/batches/:id` (a session) until every job of it ended, the
 * timeout passes or `signal` aborts. Like a job's wait (jobs/wait.ts), it looks again after a
 * pause that starts at 250 ms, grows to 2 s, and starts short again when a job moved; an outage
 * of the coordinator is waited out until the deadline, as for a job.
 */
export async function waitForBatch(api: Api, batchId: string, options: BatchWaitOptions): Promise<BatchWaitEnd> {
  const deadline = options.timeoutMs === undefined ? Infinity : Date.now() + options.timeoutMs;
  const lastStatus = new Map<string, string>();
  let wait = FIRST_PAUSE_MS;
  let batch: BatchDetail | undefined;
  for (;;) {
    const looked = await lookDuringWait(
      async () =>
        (await api.call<BatchDetail>('GET', batchPath(batchId), { answerTimeoutMs: answerTimeoutBefore(deadline) }))
          .body,
      batch,
      `batch ${batchId}`,
      { signal: options.signal, deadline, onOutage: options.onOutage },
    );
    if ('ended' in looked) return { batch: batch!, ended: looked.ended };
    const seen = looked.seen;
    const moved = batch !== undefined && seen.jobs.some((j) => lastStatus.get(j.jobId) !== j.status);
    const ended = seen.jobs.filter(
      (j) => isTerminalJobStatus(j.status) && !isTerminalJobStatus(lastStatus.get(j.jobId) ?? ''),
    );
    if (ended.length > 0) options.onJobsEnded?.(ended, seen);
    for (const job of seen.jobs) lastStatus.set(job.jobId, job.status);
    batch = seen;
    if (batchEnded(seen.status)) return { batch: seen, ended: 'finished' };
    if (Date.now() >= deadline) return { batch: seen, ended: 'timeout' };
    wait = moved ? FIRST_PAUSE_MS : Math.min(LONGEST_PAUSE_MS, Math.round(wait * 1.5));
    try {
      await pause(Math.min(wait, Math.max(0, deadline - Date.now())), options.signal);
    } catch {
      return { batch: seen, ended: 'interrupted' };
    }
  }
}

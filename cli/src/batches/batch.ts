import { JOB_STATUSES } from '@drover/shared';
import type { Schema } from '@drover/shared/api';
import { EXIT } from '../exit-codes.js';

/** A batch (`GET /v1/orgs/:orgId/batches`): the jobs of one run of a selector trigger, one per agent. */
export type Batch = Schema<'Batch'>;

/** A batch with its jobs (`GET /v1/batches/:id`, `POST /v1/batches/:id/cancel`). */
export type BatchDetail = Schema<'BatchDetail'>;

/** A job of a batch, as the batch's detail shows it. */
export type BatchJob = BatchDetail['jobs'][number];

/** What a run of a selector trigger answers: 202 the batch accepted (async), or 200 its jobs' results (sync). */
export type BatchAccepted = Schema<'BatchAccepted'>;
export type BatchResult = Schema<'BatchResult'>;

/** A job of a batch as a sync answer shows it (the detail's fields without the numbers and times). */
export type BatchJobResult = BatchResult['jobs'][number];

export const batchPath = (batchId: string) => `/batches/${encodeURIComponent(batchId)}`;

/** Whether a batch's status is final: every job of it ended. */
export const batchEnded = (status: Batch['status']): boolean => status !== 'pending' && status !== 'running';

/** Whether a run's answer is a batch's (a selector trigger) rather than one job's. */
export const isBatchAnswer = <T extends object>(
  answer: T | BatchAccepted | BatchResult,
): answer is BatchAccepted | BatchResult => 'batchId' in answer;

/**
 * The exit code of a batch that was waited for: 0 only when every job succeeded, 1 (a failed
 * job's) otherwise; 6 while it still runs (the wait ended first).
 */
export function exitCodeOfBatch(status: Batch['status']): number {
  if (!batchEnded(status)) return EXIT.stillRunning;
  return status === 'success' ? EXIT.success : EXIT.failed;
}

/** How many jobs are in each status, the empty ones left out: `2 success, 1 failed, 1 rejected`. */
export function describeCounts(jobs: readonly { status: BatchJob['status'] }[]): string {
  const counts = new Map<string, number>();
  for (const job of jobs) counts.set(job.status, (counts.get(job.status) ?? 0) + 1);
  return formatCounts(Object.fromEntries(counts));
}

/** `counts` (a batch's `counts`) as `2 success, 1 failed`, in the order of the job statuses. */
export function formatCounts(counts: Partial<Record<BatchJob['status'], number>>): string {
  return JOB_STATUSES.filter((s) => (counts[s] ?? 0) > 0)
    .map((s) => `${counts[s]} ${s}`)
    .join(', ');
}

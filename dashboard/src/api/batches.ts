import { infiniteQueryOptions, queryOptions } from '@tanstack/react-query';
import type { Schema } from '@drover/shared/api';
import { api, apiPage, apiPath } from './client';
import { JOBS_REFRESH_MS } from './jobs';
import { BATCH_POLL_MS } from './refresh';

/**
 * Batches (docs/fleets.md): the jobs of one run of a trigger on a label selector, one per agent it
 * selected. The list, a batch with its jobs, and its cancel.
 */

export type Batch = Schema<'Batch'>;
export type BatchDetail = Schema<'BatchDetail'>;
/** One job of a batch: one row per agent. */
export type BatchJob = BatchDetail['jobs'][number];
export type BatchStatus = Batch['status'];

export { BATCH_POLL_MS } from './refresh';
const PAGE_SIZE = 50;

const ENDED: ReadonlySet<BatchStatus> = new Set(['success', 'failed', 'partial', 'cancelled']);
/** Whether every job of the batch ended: its status no longer changes. */
export const batchEnded = (batch: Pick<Batch, 'status'>): boolean => ENDED.has(batch.status);

/**
 * The organization's batches, or one trigger's, newest first, a page at a time; refreshed like the
 * jobs list.
 */
export const batchesQuery = (orgId: string, triggerId?: string) =>
  infiniteQueryOptions({
    queryKey: ['orgs', orgId, 'batches', { triggerId: triggerId ?? null }],
    queryFn: ({ pageParam }) => {
      const query = new URLSearchParams({ limit: String(PAGE_SIZE) });
      if (triggerId) query.set('triggerId', triggerId);
      if (pageParam) query.set('cursor', pageParam);
      return apiPage<Batch>(apiPath`/orgs/${orgId}/batches?${query}`);
    },
    initialPageParam: '',
    getNextPageParam: (last) => last.nextCursor ?? undefined,
    refetchInterval: JOBS_REFRESH_MS,
  });

/** A trigger's last batches, newest first (its page), refreshed like the Batches page. */
export const recentTriggerBatchesQuery = (orgId: string, triggerId: string, limit = 10) =>
  queryOptions({
    queryKey: ['orgs', orgId, 'batches', { triggerId, recent: limit }],
    queryFn: async () =>
      (
        await apiPage<Batch>(
          apiPath`/orgs/${orgId}/batches?${new URLSearchParams({ triggerId, limit: String(limit) })}`,
        )
      ).items,
    refetchInterval: JOBS_REFRESH_MS,
  });

export const liveBatchKey = (batchId: string) => ['batches', batchId, 'live'];

/**
 * A batch with its jobs (`GET /batches/:id`: it names no organization, as its `statusUrl` does
 * not), read again every 2 seconds until every job ended.
 */
export const liveBatchQuery = (batchId: string) =>
  queryOptions({
    queryKey: liveBatchKey(batchId),
    queryFn: () => api<BatchDetail>('GET', apiPath`/batches/${batchId}`),
    refetchInterval: (query) => (query.state.data && batchEnded(query.state.data) ? false : BATCH_POLL_MS),
    refetchIntervalInBackground: false,
  });

/**
 * A batch's number, for places that know only its id (a job of it, the jobs list filtered on it).
 * A number never changes: read once.
 */
export const batchNumberQuery = (batchId: string) =>
  queryOptions({
    queryKey: ['batches', batchId, 'number'],
    queryFn: async () => (await api<BatchDetail>('GET', apiPath`/batches/${batchId}`)).number,
    staleTime: Infinity,
    retry: false,
  });

/** `POST /batches/:id/cancel`: every unfinished job of the batch cancelled; the batch as it is then. */
export const cancelBatch = (batchId: string) => api<BatchDetail>('POST', apiPath`/batches/${batchId}/cancel`);

/**
 * A batch's jobs by what became of them, as its progress bar shows them: `timed_out` counts as
 * failed, `queued` as pending.
 */
export const PROGRESS_PARTS = [
  { key: 'succeeded', words: 'succeeded', statuses: ['success'] },
  { key: 'failed', words: 'failed', statuses: ['failed', 'timed_out'] },
  { key: 'running', words: 'running', statuses: ['running'] },
  { key: 'pending', words: 'pending', statuses: ['pending', 'queued'] },
  { key: 'rejected', words: 'rejected', statuses: ['rejected'] },
  { key: 'cancelled', words: 'cancelled', statuses: ['cancelled'] },
] as const satisfies readonly { key: string; words: string; statuses: readonly (keyof Batch['counts'])[] }[];

export type ProgressPart = (typeof PROGRESS_PARTS)[number]['key'];

/** How many of the batch's jobs are in each part of its progress. */
export function progressOf(counts: Batch['counts']): Record<ProgressPart, number> {
  const parts = {} as Record<ProgressPart, number>;
  for (const part of PROGRESS_PARTS) parts[part.key] = part.statuses.reduce((sum, s) => sum + counts[s], 0);
  return parts;
}

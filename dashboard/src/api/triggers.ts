import { infiniteQueryOptions, queryOptions } from '@tanstack/react-query';
import type { RequestBody, Schema } from '@drover/shared/api';
import { api, apiPage, apiPath, type Page } from './client';

/** The triggers API's answers (docs/management.md "Triggers", docs/schedules.md) and its queries. */

export type Trigger = Schema<'Trigger'>;

export type TriggerType = Trigger['type'];
export type ChatProvider = NonNullable<Trigger['notifyProvider']>;

/** A cron trigger's occurrence: a job it created, or one it skipped and why (docs/schedules.md). */
export type Occurrence = Schema<'CronOccurrence'>;

/** The body a trigger is created with (docs/management.md "Triggers"). */
export type TriggerFields = RequestBody<'createTrigger'>;

/**
 * The answer of a run (public or by hand): 202 async, or 200 sync with the result; for a trigger
 * on a label selector with fanout `all`, its batch (accepted, or its jobs' results).
 */
export type RunAnswer = Schema<'RunAccepted'> | Schema<'RunResult'> | BatchAnswer;

/** A run that made a batch: one job per agent the trigger's selector picked (docs/fleets.md). */
export type BatchAnswer = Schema<'BatchAccepted'> | Schema<'BatchResult'>;

/** Whether the run made a batch (the trigger's target is its setting when the run arrives). */
export const isBatchAnswer = (answer: RunAnswer): answer is BatchAnswer => 'batchId' in answer;

/**
 * A sync run's answer (the job's result, or its status when the wait ran out). How the trigger
 * answers is its setting when the run arrives, which may have changed since the page read it.
 */
export const isRunResult = (answer: RunAnswer): answer is Schema<'RunResult'> =>
  !isBatchAnswer(answer) && 'exitCode' in answer;

/** The page a run's answer leads to: its batch's, or its job's. */
export const answerPage = (answer: RunAnswer): string =>
  isBatchAnswer(answer) ? `/api/batches/${answer.batchId}` : `/api/jobs/${answer.jobId}`;

export { TRIGGERS_REFRESH_MS } from './refresh';

export const triggersQuery = (orgId: string) =>
  queryOptions({
    queryKey: ['orgs', orgId, 'triggers'],
    queryFn: () => api<Trigger[]>('GET', apiPath`/orgs/${orgId}/triggers`),
  });

export const triggerQuery = (orgId: string, triggerId: string) =>
  queryOptions({
    queryKey: ['orgs', orgId, 'triggers', triggerId],
    queryFn: () => api<Trigger>('GET', apiPath`/orgs/${orgId}/triggers/${triggerId}`),
  });

export const OCCURRENCES_PAGE = 20;

/** A cron trigger's occurrences, newest first, a page at a time. */
export const occurrencesQuery = (orgId: string, triggerId: string) =>
  infiniteQueryOptions({
    queryKey: ['orgs', orgId, 'triggers', triggerId, 'occurrences'],
    initialPageParam: null as string | null,
    queryFn: ({ pageParam }): Promise<Page<Occurrence>> => {
      const query = new URLSearchParams({ limit: String(OCCURRENCES_PAGE) });
      if (pageParam) query.set('cursor', pageParam);
      return apiPage<Occurrence>(apiPath`/orgs/${orgId}/triggers/${triggerId}/occurrences?${query}`);
    },
    getNextPageParam: (last) => last.nextCursor,
  });

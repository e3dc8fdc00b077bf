import { infiniteQueryOptions, queryOptions } from '@tanstack/react-query';
import { api, apiPage, type Page } from './client';

/** The triggers API's answers (docs/management.md "Triggers", docs/schedules.md) and its queries. */

export type TriggerType = 'webhook' | 'cron' | 'slack' | 'discord';
export type ChatProvider = 'slack' | 'discord';

export interface Occurrence {
  scheduledAt: string;
  outcome: 'job_created' | 'skipped';
  jobId: string | null;
  jobStatus: string | null;
  reason: 'overlap' | 'missed' | 'disabled' | null;
  firstScheduledAt: string | null;
  recordedAt: string;
}

/** The fields a trigger is created and changed with. */
export interface TriggerFields {
  name: string;
  type: TriggerType;
  agentId: string;
  scopeType: 'workflow' | 'agent';
  workflowName: string | null;
  responseMode: 'async' | 'sync';
  responseTimeoutMs: number;
  allowedRefs: string[] | null;
  allowDebug: boolean;
  notifyProvider: ChatProvider | null;
  notifyTeamId: string | null;
  notifyChannelId: string | null;
  notifyOn: 'always' | 'failure' | 'success' | 'none';
  cronExpression: string | null;
  cronTimezone: string | null;
  cronEnabled: boolean | null;
  cronMissedPolicy: 'skip' | 'run_once' | null;
  cronOverlapPolicy: 'skip' | 'queue' | null;
  params: Record<string, unknown> | null;
  ref: string | null;
  chatTeamId: string | null;
  chatChannelId: string | null;
  chatKeyword: string | null;
  /** The chat user ids of the people who may run a chat trigger; null: anyone in its channel. */
  chatAllowedUserIds: string[] | null;
}

export interface Trigger extends TriggerFields {
  id: string;
  createdAt: string;
  updatedAt: string;
  nextRunAt: string | null;
  nextRuns: { at: string; localTime: string }[];
  lastOccurrences: Occurrence[];
}

/** The answer of a run (public or by hand): 202 async, 200 sync with the result. */
export interface RunAnswer {
  jobId: string;
  status: string;
  statusUrl: string;
  exitCode?: number | null;
  errorMessage?: string | null;
  output?: Record<string, unknown>;
  timedOut?: boolean;
}

/**
 * How often the triggers list and a trigger's page refresh while on screen (a cron trigger's next
 * run and occurrences move by themselves). Other pages read the triggers once.
 */
export const TRIGGERS_REFRESH_MS = 3_000;

export const triggersQuery = (orgId: string) =>
  queryOptions({
    queryKey: ['orgs', orgId, 'triggers'],
    queryFn: () => api<Trigger[]>('GET', `/orgs/${orgId}/triggers`),
  });

export const triggerQuery = (orgId: string, triggerId: string) =>
  queryOptions({
    queryKey: ['orgs', orgId, 'triggers', triggerId],
    queryFn: () => api<Trigger>('GET', `/orgs/${orgId}/triggers/${triggerId}`),
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
      return apiPage<Occurrence>(`/orgs/${orgId}/triggers/${triggerId}/occurrences?${query}`);
    },
    getNextPageParam: (last) => last.nextCursor,
  });

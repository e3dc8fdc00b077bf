import { infiniteQueryOptions, keepPreviousData, queryOptions } from '@tanstack/react-query';
import type { RequestBody, Schema } from '@drover/shared/api';
import { api, apiPage, apiPath, type Page } from './client';
import { CHOICES, namesByIdQuery, nameText, readNames } from './names-by-id';
import { AGENT_DIRECTORY_REFRESH_MS, TRIGGERS_REFRESH_MS } from './refresh';

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

export { TRIGGERS_REFRESH_MS };

/** What the Triggers page narrows its list to (docs/management.md, "Many triggers, a page at a time"). */
export interface TriggerFilters {
  type?: TriggerType;
  /** A part of the name. */
  q?: string;
}

/** Triggers a page: what a screen shows and a person reads before narrowing the list. */
export const TRIGGER_PAGE = 100;

/**
 * The organization's triggers that match the filters, oldest first, a page at a time
 * (`x-next-cursor`), each page with how many match in all. A refresh reads every page shown again,
 * so it comes every 3 s per page shown (a cron trigger's next run and occurrences move by
 * themselves): an organization of thousands of triggers sends a page, never every trigger. Under
 * the triggers' key: a change made in this dashboard refreshes it.
 */
export const triggerPagesQuery = (orgId: string, filters: TriggerFilters) =>
  infiniteQueryOptions({
    queryKey: ['orgs', orgId, 'triggers', 'pages', filters],
    queryFn: ({ pageParam }): Promise<Page<Trigger>> => {
      const query = new URLSearchParams({ limit: String(TRIGGER_PAGE) });
      if (filters.type) query.set('type', filters.type);
      if (filters.q) query.set('q', nameText(filters.q));
      if (pageParam) query.set('cursor', pageParam);
      return apiPage<Trigger>(apiPath`/orgs/${orgId}/triggers?${query}`);
    },
    initialPageParam: '',
    getNextPageParam: (last) => last.nextCursor ?? undefined,
    refetchInterval: (query) => TRIGGERS_REFRESH_MS * Math.max(1, query.state.data?.pages.length ?? 1),
  });

/**
 * The names of the triggers of these ids, 200 a read (namesByIdQuery): a deleted trigger has none.
 * Refreshed as often as the agents' names (a rename made elsewhere shows within a minute).
 */
export const triggerNamesQuery = (orgId: string, ids: Iterable<string | null | undefined>) =>
  namesByIdQuery(orgId, 'triggers', ids, AGENT_DIRECTORY_REFRESH_MS);

/**
 * The trigger names a page has read, and whether they are those of the ids it shows now: while the
 * names of another set of ids load (a new job's trigger came in), those read before stay (a name by
 * id is right wherever it was read), but a trigger missing from them is not known to be deleted.
 */
export interface TriggerNames {
  names: Map<string, string>;
  /** Read for the ids shown now: one missing was deleted. */
  complete: boolean;
}

/** The TriggerNames of a triggerNamesQuery's result, undefined before any is read. */
export const triggerNamesOf = (read: {
  data: Map<string, string> | undefined;
  isPlaceholderData: boolean;
}): TriggerNames | undefined => read.data && { names: read.data, complete: !read.isPlaceholderData };

/** The most triggers a picker offers at once: more are found by typing more of the name. */
export const TRIGGER_PICKS = 20;

/** The TRIGGER_PICKS oldest triggers whose name holds `text` (every trigger when it is empty), with how many match. */
export const triggerSearchQuery = (orgId: string, text: string) =>
  queryOptions({
    queryKey: ['orgs', orgId, 'triggers', { search: text }],
    queryFn: () => {
      const query = new URLSearchParams({ limit: String(TRIGGER_PICKS), ...(text ? { q: nameText(text) } : {}) });
      return apiPage<Trigger>(apiPath`/orgs/${orgId}/triggers?${query}`);
    },
    placeholderData: keepPreviousData,
  });

/** A webhook trigger offered to an API token, with the name of its agent (null: it runs on a selector's). */
export interface WebhookChoice extends Trigger {
  agentName: string | null;
}

/**
 * The CHOICES oldest webhook triggers whose name holds `text` (every one when it is empty), with the
 * names of their agents and how many match: what the API token form offers to run, where it read
 * every trigger and every agent of the organization.
 */
export const webhookChoicesQuery = (orgId: string, text: string) =>
  queryOptions({
    queryKey: ['orgs', orgId, 'triggers', { webhookChoices: text }],
    queryFn: async (): Promise<Page<WebhookChoice>> => {
      const query = new URLSearchParams({
        type: 'webhook',
        limit: String(CHOICES),
        ...(text ? { q: nameText(text) } : {}),
      });
      const page = await apiPage<Trigger>(apiPath`/orgs/${orgId}/triggers?${query}`);
      const agents = await readNames(
        orgId,
        'agents',
        page.items.map((t) => t.agentId),
      );
      const items = page.items.map((t) => ({
        ...t,
        agentName: t.agentId === null ? null : (agents.get(t.agentId) ?? null),
      }));
      return { ...page, items };
    },
    placeholderData: keepPreviousData,
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

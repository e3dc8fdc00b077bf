import { queryOptions } from '@tanstack/react-query';
import type { Schema } from '@drover/shared/api';
import { api, apiPath } from './client';
import { JOBS_REFRESH_MS } from './jobs';

/** The organization at a glance (`GET /orgs/:orgId/overview`, docs/management.md "Overview"). */
export type Overview = Schema<'Overview'>;
export type OverviewJob = Schema<'OverviewJob'>;
export type HourBucket = Overview['jobs']['buckets'][number];

/** The outcomes the chart counts, in the order it stacks them (bottom first) and the words it says them with. */
export const OUTCOMES = ['success', 'failed', 'timed_out', 'cancelled', 'rejected'] as const;
export type Outcome = (typeof OUTCOMES)[number];
export const OUTCOME_WORDS: Record<Outcome, string> = {
  success: 'succeeded',
  failed: 'failed',
  timed_out: 'timed out',
  cancelled: 'cancelled',
  rejected: 'rejected',
};

/** The hours the home page counts. */
export const OVERVIEW_HOURS = 24;
export const HOUR_MS = 3_600_000;

/** The overview, refreshed like the jobs list while the page is open. */
export const overviewQuery = (orgId: string, hours = OVERVIEW_HOURS) =>
  queryOptions({
    queryKey: ['orgs', orgId, 'overview', hours],
    queryFn: () => api<Overview>('GET', apiPath`/orgs/${orgId}/overview?hours=${hours}`),
    refetchInterval: JOBS_REFRESH_MS,
  });

/** The Jobs page's address for `filters` (its search parameters: docs/dashboard.md, "Jobs"). */
export const jobsLink = (orgId: string, filters: Record<string, string>): string => {
  const query = new URLSearchParams(filters).toString();
  return `/orgs/${orgId}/jobs${query ? `?${query}` : ''}`;
};

/** The end of an hour bucket (the next one's start), for the Jobs page's `createdBefore`. */
export const bucketEnd = (bucket: HourBucket): string => new Date(Date.parse(bucket.start) + HOUR_MS).toISOString();

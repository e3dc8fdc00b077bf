import { queryOptions } from '@tanstack/react-query';
import type { RequestBody, Schema } from '@drover/shared/api';
import { api, apiPath } from './client';

/**
 * How long the organization keeps ended jobs, audit entries and cron occurrences, the
 * coordinator's settings, the database's size and the last sweep (docs/operations.md, "Retention").
 */

/** `GET /orgs/:orgId/retention` */
export type RetentionView = Schema<'RetentionView'>;

/** The organization with the retention that applies (`PATCH /orgs/:orgId` answers it). */
export type OrgView = Schema<'OrgView'>;

/** What an owner sends: the four values, null for the coordinator's setting. */
export type RetentionChange = RequestBody<'updateOrg'>['retention'];

export type RetentionField = keyof RetentionView['retention'];

export type SweepDeleted = NonNullable<RetentionView['lastSweep']>['deleted'];

/** Each value in the page's words: what it keeps, and what goes once it is older. */
export const RETENTION_FIELDS: readonly { field: RetentionField; label: string; what: string }[] = [
  { field: 'jobsDays', label: 'Ended jobs', what: 'jobs that ended success, cancelled or rejected, with their logs' },
  { field: 'failedJobsDays', label: 'Failed jobs', what: 'jobs that failed or timed out, with their logs' },
  { field: 'auditDays', label: 'Audit entries', what: 'the audit log, and the history of staged rollouts that ended' },
  { field: 'occurrencesDays', label: 'Cron occurrences', what: "a cron trigger's schedule history (its newest stays)" },
];

/** The rows a sweep deleted, by kind, in the page's words. */
export const DELETED_KINDS: readonly { kind: keyof SweepDeleted; label: string }[] = [
  { kind: 'jobs', label: 'Jobs' },
  { kind: 'logLines', label: 'Log lines' },
  { kind: 'auditEntries', label: 'Audit entries' },
  { kind: 'occurrences', label: 'Cron occurrences' },
  { kind: 'batches', label: 'Batches' },
  { kind: 'rolloutEvents', label: 'Rollout history' },
];

/** Whole days, as the API takes them. */
export const MIN_RETENTION_DAYS = 1;
export const MAX_RETENTION_DAYS = 3650;

export const retentionQuery = (orgId: string) =>
  queryOptions({
    queryKey: ['orgs', orgId, 'retention'],
    queryFn: () => api<RetentionView>('GET', apiPath`/orgs/${orgId}/retention`),
  });

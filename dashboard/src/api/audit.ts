import { infiniteQueryOptions, queryOptions } from '@tanstack/react-query';
import type { Schema } from '@drover/shared/api';
import { api, apiPage, apiPath } from './client';

/** An entry of the audit log (`GET /v1/orgs/:orgId/audit`, owners only). */
export type AuditEntry = Schema<'AuditEntry'>;

/** The Audit page's filters, as the address's search parameters carry them (the API's names). */
export interface AuditFilters {
  action?: string;
  actorType?: string;
  /** Only the entries of one actor: a member, an API token or an agent (its id). */
  actorId?: string;
  targetType?: string;
  targetId?: string;
  createdAfter?: string;
  createdBefore?: string;
}

export const AUDIT_FILTER_KEYS = [
  'action',
  'actorType',
  'actorId',
  'targetType',
  'targetId',
  'createdAfter',
  'createdBefore',
] as const;

const PAGE_SIZE = 50;

export const auditQuery = (orgId: string, filters: AuditFilters, enabled: boolean) =>
  infiniteQueryOptions({
    queryKey: ['orgs', orgId, 'audit', filters],
    queryFn: ({ pageParam }) => {
      const query = new URLSearchParams({ limit: String(PAGE_SIZE) });
      for (const key of AUDIT_FILTER_KEYS) if (filters[key]) query.set(key, filters[key]);
      if (pageParam) query.set('cursor', pageParam);
      return apiPage<AuditEntry>(apiPath`/orgs/${orgId}/audit?${query}`);
    },
    initialPageParam: '',
    getNextPageParam: (last) => last.nextCursor ?? undefined,
    enabled,
  });

/** API token names, for the entries a token made or that name one (owners only). */
export const tokenNamesQuery = (orgId: string, enabled: boolean) =>
  queryOptions({
    queryKey: ['orgs', orgId, 'api-tokens'],
    queryFn: () => api<{ id: string; name: string }[]>('GET', apiPath`/orgs/${orgId}/api-tokens`),
    enabled,
  });

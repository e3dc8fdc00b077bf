import { infiniteQueryOptions, queryOptions } from '@tanstack/react-query';
import { api, apiPage } from './client';

/** An entry of the audit log (`GET /v1/orgs/:orgId/audit`, owners only). */
export interface AuditEntry {
  id: number;
  action: string;
  actorType: 'user' | 'api_token' | 'agent' | 'system';
  actorId: string | null;
  targetType: string | null;
  targetId: string | null;
  metadata: Record<string, unknown>;
  createdAt: string;
}

/** The Audit page's filters, as the address's search parameters carry them (the API's names). */
export interface AuditFilters {
  action?: string;
  actorType?: string;
  targetType?: string;
  targetId?: string;
  createdAfter?: string;
  createdBefore?: string;
}

export const AUDIT_FILTER_KEYS = [
  'action',
  'actorType',
  'targetType',
  'targetId',
  'createdAfter',
  'createdBefore',
] as const;

/**
 * Each action the coordinator records as the page says it (docs/management.md, "Audit log"): the
 * verb between who acted and the target ("alice@example.com **revoked** the API token ci").
 */
export const AUDIT_ACTIONS: Record<string, string> = {
  'org.create': 'created',
  'member.add': 'added',
  'invitation.create': 'created',
  'invitation.revoke': 'revoked',
  'invitation.accept': 'accepted an invitation and joined',
  'invitation.decline': 'declined an invitation',
  'member.update': 'changed the role of',
  'member.remove': 'removed',
  'enrollment_token.create': 'created',
  'agent.enroll': 'enrolled',
  'agent.rename': 'renamed',
  'agent.revoke': 'revoked',
  'enrollment.lockout': 'blocked, after failed enrollments,',
  'workflow.update_limits': 'changed the limits of',
  'trigger.create': 'created',
  'trigger.update': 'changed',
  'trigger.delete': 'deleted',
  'trigger.run': 'ran by hand',
  'trigger.force_run': 'forced a run of',
  'job.cancel': 'cancelled',
  'api_token.issue': 'issued',
  'api_token.revoke': 'revoked',
  'api_token.discover': 'listed what it may use',
  'rate_limit.block': 'was held back by the rate limit of',
  'auth.lockout': 'locked, after failed sign-ins,',
  'auth.password_change': 'changed their password',
  'auth.sign_out_everywhere': 'signed out everywhere',
  'storage_binding.create': 'created',
  'storage_binding.delete': 'deleted',
  'file.delete': 'deleted',
  'app.create': 'created',
  'app.update': 'changed',
  'app.delete': 'deleted',
  'release.create': 'created',
  'release.update': 'changed',
  'device.bind': 'bound',
  'device.update': 'changed',
  'device.unbind': 'unbound',
  'device.reconcile': 'reconciled',
};

/** Actions whose target is the actor itself: the sentence names it once. */
export const SELF_TARGETED = new Set(['api_token.discover']);

export const ACTOR_TYPES: Record<string, string> = {
  user: 'a member',
  api_token: 'an API token',
  agent: 'an agent',
  system: 'the coordinator',
};

export const TARGET_TYPES: Record<string, string> = {
  user: 'member',
  agent: 'agent',
  trigger: 'trigger',
  job: 'job',
  workflow: 'workflow',
  api_token: 'API token',
  enrollment_token: 'enrollment token',
  storage_binding: 'storage binding',
  file: 'file',
  org: 'organization',
  address: 'client address',
  device_binding: 'device',
  application: 'application',
  release: 'release',
  chat_integration: 'chat workspace',
  invitation: 'invitation of',
};

const PAGE_SIZE = 50;

export const auditQuery = (orgId: string, filters: AuditFilters, enabled: boolean) =>
  infiniteQueryOptions({
    queryKey: ['orgs', orgId, 'audit', filters],
    queryFn: ({ pageParam }) => {
      const query = new URLSearchParams({ limit: String(PAGE_SIZE) });
      for (const key of AUDIT_FILTER_KEYS) if (filters[key]) query.set(key, filters[key]);
      if (pageParam) query.set('cursor', pageParam);
      return apiPage<AuditEntry>(`/orgs/${orgId}/audit?${query}`);
    },
    initialPageParam: '',
    getNextPageParam: (last) => last.nextCursor ?? undefined,
    enabled,
  });

/** API token names, for the entries a token made or that name one (owners only). */
export const tokenNamesQuery = (orgId: string, enabled: boolean) =>
  queryOptions({
    queryKey: ['orgs', orgId, 'api-tokens'],
    queryFn: () => api<{ id: string; name: string }[]>('GET', `/orgs/${orgId}/api-tokens`),
    enabled,
  });

import { queryOptions } from '@tanstack/react-query';
import { api } from './client';
import type { Role } from './types';

/**
 * Who may reach the organization: its API tokens with their grants (docs/management.md, "API
 * tokens and grants"), its members and the invitations to it (docs/management.md, "Members").
 */

export type StoragePermission = 'read' | 'write' | 'delete';
export const STORAGE_PERMISSIONS: readonly StoragePermission[] = ['read', 'write', 'delete'];

export type Grant =
  | { type: 'agent'; agentIds: string[] }
  | { type: 'trigger'; triggerIds: string[] }
  | { type: 'storage'; bindingIds: string[] | null; permissions: StoragePermission[] };

/**
 * A grant as the API answers it: the lists of its type, each of which the answer's schema lets
 * be absent (the pages read them with a default).
 */
export interface GrantView {
  type: Grant['type'];
  agentIds?: string[];
  triggerIds?: string[];
  bindingIds?: string[] | null;
  permissions?: StoragePermission[];
}

export interface ApiToken {
  id: string;
  name: string;
  /** `drv_…` and the last four characters. */
  hint: string;
  scopes: GrantView[];
  rateLimit: { perMinute: number | null; perHour: number | null; perDay: number | null };
  expiresAt: string | null;
  revokedAt: string | null;
  createdAt: string;
}

/** The issuing answer: the token and, this once, its plaintext. */
export interface IssuedApiToken extends ApiToken {
  token: string;
}

export interface IssueRequest {
  name: string;
  scopes: Grant[];
  rateLimitPerMinute: number | null;
  rateLimitPerHour: number | null;
  rateLimitPerDay: number | null;
  expiresAt: string | null;
}

export interface Member {
  userId: string;
  email: string;
  role: Role;
  joinedAt: string;
}

/** An invitation to an organization (docs/management.md, "Members"). */
export interface Invitation {
  id: string;
  orgId: string;
  orgName: string;
  email: string;
  role: Role;
  status: 'pending' | 'accepted' | 'declined' | 'revoked' | 'expired';
  invitedBy: { userId: string; email: string } | null;
  createdAt: string;
  expiresAt: string;
  endedAt: string | null;
}

export const apiTokensQuery = (orgId: string) =>
  queryOptions({
    queryKey: ['orgs', orgId, 'api-tokens'],
    queryFn: () => api<ApiToken[]>('GET', `/orgs/${orgId}/api-tokens`),
  });

export const membersQuery = (orgId: string) =>
  queryOptions({
    queryKey: ['orgs', orgId, 'members'],
    queryFn: () => api<Member[]>('GET', `/orgs/${orgId}/members`),
  });

/** The organization's pending invitations (owners only). */
export const invitationsQuery = (orgId: string) =>
  queryOptions({
    queryKey: ['orgs', orgId, 'invitations'],
    queryFn: () => api<Invitation[]>('GET', `/orgs/${orgId}/invitations`),
  });

/** The signed-in user's own pending invitations. */
export const myInvitationsQuery = queryOptions({
  queryKey: ['invitations'],
  queryFn: () => api<Invitation[]>('GET', '/invitations'),
});

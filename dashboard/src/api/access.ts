import { queryOptions } from '@tanstack/react-query';
import type { RequestBody, Schema } from '@drover/shared/api';
import { api, apiPath } from './client';

/**
 * Who may reach the organization: its API tokens with their grants (docs/management.md, "API
 * tokens and grants"), its members and the invitations to it (docs/management.md, "Members").
 */

export type StoragePermission = Extract<GrantView, { type: 'storage' }>['permissions'][number];
export const STORAGE_PERMISSIONS: readonly StoragePermission[] = ['read', 'write', 'delete'];

/** A grant as the API answers it: its type and the fields of that type. */
export type GrantView = Schema<'Grant'>;

export type ApiToken = Schema<'ApiToken'>;

/** The issuing answer: the token and, this once, its plaintext. */
export type IssuedApiToken = Schema<'IssuedApiToken'>;

/** What a token is issued with. */
export type IssueRequest = RequestBody<'issueApiToken'>;

/** A grant as the issuing form sends it. */
export type Grant = IssueRequest['scopes'][number];

export type Member = Schema<'Member'>;

/** An invitation to an organization (docs/management.md, "Members"). */
export type Invitation = Schema<'Invitation'>;

export const apiTokensQuery = (orgId: string) =>
  queryOptions({
    queryKey: ['orgs', orgId, 'api-tokens'],
    queryFn: () => api<ApiToken[]>('GET', apiPath`/orgs/${orgId}/api-tokens`),
  });

export const membersQuery = (orgId: string) =>
  queryOptions({
    queryKey: ['orgs', orgId, 'members'],
    queryFn: () => api<Member[]>('GET', apiPath`/orgs/${orgId}/members`),
  });

/** The organization's pending invitations (owners only). */
export const invitationsQuery = (orgId: string) =>
  queryOptions({
    queryKey: ['orgs', orgId, 'invitations'],
    queryFn: () => api<Invitation[]>('GET', apiPath`/orgs/${orgId}/invitations`),
  });

/** The signed-in user's own pending invitations. */
export const myInvitationsQuery = queryOptions({
  queryKey: ['invitations'],
  queryFn: () => api<Invitation[]>('GET', apiPath`/invitations`),
});

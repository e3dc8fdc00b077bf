import { queryOptions } from '@tanstack/react-query';
import type { RequestBody, Schema } from '@drover/shared/api';
import { api, apiPath } from './client';

/** An organization's storage bindings (docs/management.md, "Storage bindings"). */
export type StorageBinding = Schema<'StorageBinding'>;

/** The create body: a local binding has no settings; an s3 one has its endpoint, bucket and keys. */
export type NewBinding = RequestBody<'createStorageBinding'>;

export const bindingsQuery = (orgId: string) =>
  queryOptions({
    queryKey: ['orgs', orgId, 'storage-bindings'],
    queryFn: () => api<StorageBinding[]>('GET', apiPath`/orgs/${orgId}/storage-bindings`),
  });

export const createBinding = (orgId: string, body: NewBinding) =>
  api<StorageBinding>('POST', apiPath`/orgs/${orgId}/storage-bindings`, { body });

export const deleteBinding = (orgId: string, bindingId: string) =>
  api<StorageBinding>('DELETE', apiPath`/orgs/${orgId}/storage-bindings/${bindingId}`);

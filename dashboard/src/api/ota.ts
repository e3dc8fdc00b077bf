import { queryOptions } from '@tanstack/react-query';
import type { Schema } from '@drover/shared/api';
import { api, apiPath } from './client';
import type { StoredFile } from './files';
import { OTA_REFRESH_MS } from './refresh';

/** The OTA API's answers (docs/ota.md "Dashboard endpoints") and its queries; uploads are in files.ts. */

export type App = Schema<'Application'>;

/** A maintenance window's opening and end (docs/ota.md, "Maintenance windows"). */
export type NextWindow = Schema<'NextWindow'>;
export type WindowPreview = Schema<'WindowPreview'>;

export type Release = Schema<'Release'>;
export type UpdatePolicy = Release['updatePolicy'];
export type ReleaseStatus = Release['status'];

/** A device of an application: its channel, the release it runs and the one it should run. */
export type Binding = Schema<'DeviceBinding'>;

/** A release a device runs or should run; `releaseId` null: the agent reported only a version. */
export type ReleaseRef = NonNullable<Binding['current']>;

/** Where a file is stored (docs/storage.md); an upload names one when the organization has several. */
export type StorageBinding = Schema<'StorageBinding'>;

export { OTA_REFRESH_MS } from './refresh';

export const appsQuery = (orgId: string) =>
  queryOptions({
    queryKey: ['orgs', orgId, 'apps'],
    queryFn: () => api<App[]>('GET', apiPath`/orgs/${orgId}/apps`),
  });

export const appQuery = (orgId: string, appId: string) =>
  queryOptions({
    queryKey: ['orgs', orgId, 'apps', appId],
    queryFn: () => api<App>('GET', apiPath`/orgs/${orgId}/apps/${appId}`),
  });

export const releasesQuery = (orgId: string, appId: string) =>
  queryOptions({
    queryKey: ['orgs', orgId, 'apps', appId, 'releases'],
    queryFn: () => api<Release[]>('GET', apiPath`/orgs/${orgId}/apps/${appId}/releases`),
    refetchInterval: OTA_REFRESH_MS,
  });

export const devicesQuery = (orgId: string, appId: string) =>
  queryOptions({
    queryKey: ['orgs', orgId, 'apps', appId, 'devices'],
    queryFn: () => api<Binding[]>('GET', apiPath`/orgs/${orgId}/apps/${appId}/devices`),
    refetchInterval: OTA_REFRESH_MS,
  });

/**
 * The next windows a maintenance window would open, as the coordinator computes them (the
 * dashboard has no cron parser of its own): the window editor asks as the operator types.
 */
export const windowPreviewQuery = (
  orgId: string,
  window: { cron: string; timezone: string; durationMinutes: string },
) =>
  queryOptions({
    queryKey: ['orgs', orgId, 'maintenance-window-preview', window.cron, window.timezone, window.durationMinutes],
    queryFn: () => {
      // As Save sends it (a number): `090` and `1e2` are 90 and 100 here too.
      const minutes = window.durationMinutes.trim();
      const asNumber = Number(minutes);
      const query = new URLSearchParams({
        cron: window.cron,
        timezone: window.timezone.trim(),
        durationMinutes: minutes !== '' && Number.isSafeInteger(asNumber) ? String(asNumber) : minutes,
      });
      return api<WindowPreview>('GET', apiPath`/orgs/${orgId}/maintenance-windows/preview?${query}`);
    },
    staleTime: 30_000,
  });

/** The files a release may point at: active and persistent (newest first). */
export const artifactFilesQuery = (orgId: string) =>
  queryOptions({
    queryKey: ['orgs', orgId, 'files', 'active'],
    queryFn: async () =>
      (await api<StoredFile[]>('GET', apiPath`/orgs/${orgId}/files?status=active`)).filter(
        (f) => f.cleanupRule === 'persistent',
      ),
  });

export const storageBindingsQuery = (orgId: string) =>
  queryOptions({
    queryKey: ['orgs', orgId, 'storage-bindings'],
    queryFn: () => api<StorageBinding[]>('GET', apiPath`/orgs/${orgId}/storage-bindings`),
  });

/** `1.2 MB`, `340 B` */
export function byteSize(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  if (n < 1024 ** 3) return `${(n / 1024 ** 2).toFixed(1)} MB`;
  return `${(n / 1024 ** 3).toFixed(1)} GB`;
}

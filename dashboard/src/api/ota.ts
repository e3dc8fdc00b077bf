import { infiniteQueryOptions, keepPreviousData, queryOptions } from '@tanstack/react-query';
import type { Schema } from '@drover/shared/api';
import { api, apiPage, apiPath, type Page } from './client';
import { CHOICES, nameText } from './names-by-id';
import type { Agent } from './types';
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

/** Devices alike in channel, origin, current and desired release, update under way and state, and how many. */
export type DeviceCount = Schema<'DeviceCount'>;

/** What setting a device selector would do now (`device-group/preview`). */
export type DeviceGroupPreview = Schema<'DeviceGroupPreview'>;

/** The key every read of an application's devices is under: a change to them refreshes each. */
export const devicesKey = (orgId: string, appId: string) => ['orgs', orgId, 'apps', appId, 'devices'] as const;

/** What the devices table narrows its list to (docs/ota.md, "Device bindings"). */
export interface DeviceFilters {
  /** Text of the agent's name or hostname. */
  q?: string;
  state?: NonNullable<Binding['state']>;
}

/** Devices a page: what a screen shows and a person reads before narrowing the list. */
export const DEVICE_PAGE = 100;

/**
 * The application's devices that match the filters, in bind order, a page at a time
 * (`x-next-cursor`), each page saying how many match in all. A refresh reads every page shown
 * again: an application of 10,000 devices sends a page every few seconds, never every device
 * (3.6 MB every 2 s before). Under the devices' key: a change made on the page refreshes it.
 */
export const devicePagesQuery = (orgId: string, appId: string, filters: DeviceFilters) =>
  infiniteQueryOptions({
    queryKey: ['orgs', orgId, 'apps', appId, 'devices', { pages: filters }],
    queryFn: ({ pageParam }) => {
      const query = new URLSearchParams({ limit: String(DEVICE_PAGE) });
      const q = filters.q?.trim();
      if (q) query.set('q', nameText(q));
      if (filters.state) query.set('state', filters.state);
      if (pageParam) query.set('cursor', pageParam);
      return apiPage<Binding>(apiPath`/orgs/${orgId}/apps/${appId}/devices?${query}`);
    },
    initialPageParam: '',
    getNextPageParam: (last) => last.nextCursor ?? undefined,
    placeholderData: keepPreviousData,
    refetchInterval: (query) => OTA_REFRESH_MS * Math.max(1, query.state.data?.pages.length ?? 1),
  });

/**
 * The application's devices counted (`device-counts`): a few groups of alike devices however many
 * there are, from which the releases' counts and the impact of a publish or a yank are worked out.
 */
export const deviceCountsQuery = (orgId: string, appId: string) =>
  queryOptions({
    queryKey: ['orgs', orgId, 'apps', appId, 'devices', { counts: true }],
    queryFn: () => api<DeviceCount[]>('GET', apiPath`/orgs/${orgId}/apps/${appId}/device-counts`),
    // As often as the releases they count (counting reads every binding: ~37 ms of the coordinator's
    // CPU at 10,000 devices, where reading every device was ~150 ms and 3.6 MB).
    refetchInterval: OTA_REFRESH_MS,
  });

/** The agents among these that are bound to the application (up to 200 ids: those chosen to bind). */
export const boundAgentsQuery = (orgId: string, appId: string, agentIds: readonly string[]) => {
  const ids = [...new Set(agentIds)].sort();
  return queryOptions({
    queryKey: ['orgs', orgId, 'apps', appId, 'devices', { bound: ids }],
    queryFn: async (): Promise<Set<string>> => {
      const query = new URLSearchParams(ids.map((id) => ['agentId', id]));
      const bound = await api<Binding[]>('GET', apiPath`/orgs/${orgId}/apps/${appId}/devices?${query}`);
      return new Set(bound.map((b) => b.agentId));
    },
    enabled: ids.length > 0,
    refetchInterval: OTA_REFRESH_MS,
  });
};

/** An agent offered to bind: whether it is bound to the application already. */
export interface BindChoice extends Agent {
  bound: boolean;
}

/**
 * The CHOICES most recently registered agents whose name or hostname holds `text` (every agent
 * when it is empty), each saying whether it is bound to the application already, with how many
 * match: what "Bind agents" offers, where it read every agent and every device.
 */
export const bindChoicesQuery = (orgId: string, appId: string, text: string) =>
  queryOptions({
    queryKey: ['orgs', orgId, 'apps', appId, 'devices', { bindChoices: text }],
    queryFn: async (): Promise<Page<BindChoice>> => {
      const query = new URLSearchParams({ limit: String(CHOICES), ...(text ? { q: nameText(text) } : {}) });
      const page = await apiPage<Agent>(apiPath`/orgs/${orgId}/agents?${query}`);
      const bound = new Set<string>();
      if (page.items.length > 0) {
        const ids = new URLSearchParams(page.items.map((agent) => ['agentId', agent.id]));
        for (const b of await api<Binding[]>('GET', apiPath`/orgs/${orgId}/apps/${appId}/devices?${ids}`)) {
          bound.add(b.agentId);
        }
      }
      return { ...page, items: page.items.map((agent) => ({ ...agent, bound: bound.has(agent.id) })) };
    },
    placeholderData: keepPreviousData,
    refetchInterval: OTA_REFRESH_MS,
  });

/** What setting `selector` as the application's device group would do now, as the coordinator works it out. */
export const deviceGroupPreviewQuery = (orgId: string, appId: string, selector: string) =>
  queryOptions({
    queryKey: ['orgs', orgId, 'apps', appId, 'devices', { preview: selector }],
    queryFn: () =>
      api<DeviceGroupPreview>(
        'GET',
        apiPath`/orgs/${orgId}/apps/${appId}/device-group/preview?${new URLSearchParams({ selector })}`,
      ),
    placeholderData: keepPreviousData,
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

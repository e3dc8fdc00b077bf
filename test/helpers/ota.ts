import type { TestCoordinator } from './coordinator.js';
import type { ApiClient } from './http.js';
import { storageClient, uploadFile } from './storage.js';

/** OTA shortcuts through the dashboard API (docs/ota.md). Each throws on an unexpected status. */

export interface AppBody {
  id: string;
  slug: string;
  updateWorkflowName: string;
  defaultChannel: string;
  deviceSelector: string | null;
  maintenanceWindow: { cron: string; timezone: string; durationMinutes: number } | null;
  nextWindows: { opensAt: string; closesAt: string; localOpensAt: string }[];
  createdAt: string;
}

/** The answer of `PATCH /orgs/:orgId/apps/:appId`. */
export interface AppUpdateBody extends AppBody {
  deviceGroup: { matching: number; bound: number; unbound: number } | null;
}

export interface ReleaseBody {
  id: string;
  applicationId: string;
  version: string;
  sequence: number;
  channel: string;
  updatePolicy: 'mandatory' | 'optional';
  status: 'draft' | 'published' | 'yanked';
  artifactFileId: string;
  checksumSha256: string;
  size: number;
  notes: string | null;
  createdAt: string;
  publishedAt: string | null;
  yankedAt: string | null;
}

export interface ReleaseRefBody {
  releaseId: string | null;
  version: string;
  sequence: number;
}

export interface BindingBody {
  id: string;
  applicationId: string;
  agentId: string;
  channel: string;
  origin: 'manual' | 'selector';
  current: ReleaseRefBody | null;
  desired: ReleaseRefBody | null;
  forced: boolean;
  state: string | null;
  error: string | null;
  activeJobId: string | null;
  cancelledJobId: string | null;
  lastReportAt: string | null;
  waitingForWindow: boolean;
  nextWindowAt: string | null;
}

function expectStatus<T>(res: { status: number; text: string; body: T }, status: number, what: string): T {
  if (res.status !== status) throw new Error(`${what}: ${res.status} ${res.text}`);
  return res.body;
}

export async function createApp(
  client: ApiClient,
  orgId: string,
  body: { slug: string; updateWorkflowName?: string; defaultChannel?: string; releaseKeys?: string[] },
): Promise<AppBody> {
  const res = await client.post<AppBody>(`/orgs/${orgId}/apps`, {
    body: { updateWorkflowName: 'apply-update', ...body },
  });
  return expectStatus(res, 201, 'create app');
}

/** A client whose API token may write, read and delete files in every binding. */
export function artifactUploader(t: TestCoordinator): Promise<ApiClient> {
  return storageClient(t, null, ['read', 'write', 'delete']);
}

/** Uploads `data` as a persistent file (an artifact) and returns its id. */
export async function uploadArtifact(uploader: ApiClient, data: string | Uint8Array, filename = 'app.tar.gz') {
  const { fileId } = await uploadFile(uploader, data, { cleanupRule: 'persistent', filename });
  return fileId;
}

export async function createRelease(
  client: ApiClient,
  orgId: string,
  appId: string,
  body: { version: string; artifactFileId: string; channel?: string; updatePolicy?: string; notes?: string | null },
): Promise<ReleaseBody> {
  const res = await client.post<ReleaseBody>(`/orgs/${orgId}/apps/${appId}/releases`, { body });
  return expectStatus(res, 201, 'create release');
}

export async function publishRelease(client: ApiClient, orgId: string, appId: string, releaseId: string) {
  const res = await client.post<ReleaseBody>(`/orgs/${orgId}/apps/${appId}/releases/${releaseId}/publish`);
  return expectStatus(res, 200, 'publish');
}

export async function yankRelease(client: ApiClient, orgId: string, appId: string, releaseId: string) {
  const res = await client.post<ReleaseBody>(`/orgs/${orgId}/apps/${appId}/releases/${releaseId}/yank`);
  return expectStatus(res, 200, 'yank');
}

/** Creates and publishes a release in one go. */
export async function release(
  client: ApiClient,
  orgId: string,
  appId: string,
  body: { version: string; artifactFileId: string; channel?: string; updatePolicy?: string },
): Promise<ReleaseBody> {
  const created = await createRelease(client, orgId, appId, body);
  return publishRelease(client, orgId, appId, created.id);
}

export async function bindDevices(
  client: ApiClient,
  orgId: string,
  appId: string,
  agentIds: string[],
  channel?: string,
): Promise<BindingBody[]> {
  const res = await client.post<BindingBody[]>(`/orgs/${orgId}/apps/${appId}/devices`, {
    body: channel === undefined ? { agentIds } : { agentIds, channel },
  });
  return expectStatus(res, 201, 'bind');
}

/** Sets (or, with null, removes) the application's device selector. */
export async function setDeviceSelector(
  client: ApiClient,
  orgId: string,
  appId: string,
  deviceSelector: string | null,
) {
  const res = await client.patch<AppUpdateBody>(`/orgs/${orgId}/apps/${appId}`, { body: { deviceSelector } });
  return expectStatus(res, 200, 'set the device selector');
}

export async function listBindings(client: ApiClient, orgId: string, appId: string) {
  const res = await client.get<BindingBody[]>(`/orgs/${orgId}/apps/${appId}/devices`);
  return expectStatus(res, 200, 'list bindings');
}

export async function getBinding(client: ApiClient, orgId: string, appId: string, deviceId: string) {
  const res = await client.get<BindingBody>(`/orgs/${orgId}/apps/${appId}/devices/${deviceId}`);
  return expectStatus(res, 200, 'get binding');
}

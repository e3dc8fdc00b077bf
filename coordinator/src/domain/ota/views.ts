import type { DeviceState, ReleaseRef } from '@drover/shared';
import type { AppNotify, Application, MaintenanceWindow } from '../model/applications.js';
import type { BindingOrigin, DeviceBinding, DesiredState, Installation } from '../model/device-bindings.js';
import type { Release } from '../model/releases.js';
import { nextWindows, type WindowView } from './maintenance-window.js';

/** The answers of the OTA dashboard endpoints (docs/ota.md's fixed bodies). */

export interface AppView {
  id: string;
  slug: string;
  updateWorkflowName: string;
  defaultChannel: string;
  notify: AppNotify | null;
  /** The device group's label selector (canonical), or null (docs/ota.md, "Device groups"). */
  deviceSelector: string | null;
  maintenanceWindow: MaintenanceWindow | null;
  /** The windows not yet ended at the answer (the open one first), NEXT_WINDOWS_SHOWN; [] without a window. */
  nextWindows: WindowView[];
  /** The keys one of which signs every release (docs/ota.md, "Release keys"); null: unsigned releases. */
  releaseKeys: string[] | null;
  /** How many times they were rotated. */
  releaseKeyGeneration: number;
  createdAt: string;
}

/** The application as the API shows it at `now` (Unix ms). */
export const toAppView = (app: Application, now: number): AppView => ({
  id: app.id,
  slug: app.slug,
  updateWorkflowName: app.updateWorkflowName,
  defaultChannel: app.defaultChannel,
  notify: app.notify,
  deviceSelector: app.deviceSelector,
  maintenanceWindow: app.maintenanceWindow,
  nextWindows: app.maintenanceWindow ? nextWindows(app.maintenanceWindow, now) : [],
  releaseKeys: app.releaseKeys,
  releaseKeyGeneration: app.releaseKeyRotations.at(-1)?.generation ?? 0,
  createdAt: app.createdAt,
});

export type ReleaseView = Release;

export const toReleaseView = (r: Release): ReleaseView => ({
  id: r.id,
  applicationId: r.applicationId,
  version: r.version,
  sequence: r.sequence,
  channel: r.channel,
  updatePolicy: r.updatePolicy,
  status: r.status,
  artifactFileId: r.artifactFileId,
  checksumSha256: r.checksumSha256,
  size: r.size,
  notes: r.notes,
  signature: r.signature,
  createdAt: r.createdAt,
  publishedAt: r.publishedAt,
  yankedAt: r.yankedAt,
});

export interface BindingView {
  id: string;
  applicationId: string;
  agentId: string;
  channel: string;
  /** `manual` (bound by `agentIds`) or `selector` (by the application's device selector). */
  origin: BindingOrigin;
  current: ReleaseRef | null;
  desired: ReleaseRef | null;
  forced: boolean;
  state: DeviceState | null;
  error: string | null;
  activeJobId: string | null;
  /** The update job a user cancelled; no new one is issued until a reconcile (docs/ota.md). */
  cancelledJobId: string | null;
  lastReportAt: string | null;
  /** The update waits for the application's maintenance window to open (docs/ota.md). */
  waitingForWindow: boolean;
  /** When that window opens; null when not waiting. */
  nextWindowAt: string | null;
}

export const installationRef = (i: Installation | null): ReleaseRef | null =>
  i ? { releaseId: i.releaseId, version: i.version, sequence: i.sequence } : null;

export const releaseRef = (r: Pick<Release, 'id' | 'version' | 'sequence'> | null): ReleaseRef | null =>
  r ? { releaseId: r.id, version: r.version, sequence: r.sequence } : null;

/** A binding with its desired state (computed from the application's releases). */
export const toBindingView = (b: DeviceBinding, state: Pick<DesiredState, 'desired' | 'forced'>): BindingView => ({
  id: b.id,
  applicationId: b.applicationId,
  agentId: b.agentId,
  channel: b.channel,
  origin: b.origin,
  current: installationRef(b.current),
  desired: releaseRef(state.desired),
  forced: state.forced,
  state: b.state,
  error: b.error,
  activeJobId: b.activeJobId,
  cancelledJobId: b.cancelledJobId,
  lastReportAt: b.lastReportAt,
  waitingForWindow: b.windowOpensAt !== null,
  nextWindowAt: b.windowOpensAt,
});

import type { DeviceState } from '@drover/shared';
import type { BindingOrigin, DeviceBinding } from '../../domain/model/device-bindings.js';
import { isSet } from '../sql/index.js';

/** A row of `device_bindings`, as both databases give it (db/sql/postgres.ts). */
export interface DeviceBindingRow {
  id: string;
  org_id: string;
  application_id: string;
  agent_id: string;
  channel: string;
  origin: BindingOrigin;
  current_release_id: string | null;
  current_version: string | null;
  current_sequence: number | null;
  desired_release_id: string | null;
  forced: number;
  state: DeviceState | null;
  error: string | null;
  active_job_id: string | null;
  last_report_at: string | null;
  failed_attempts: number;
  retry_at: string | null;
  postponed_release_id: string | null;
  cancelled_job_id: string | null;
  window_opens_at: string | null;
  window_closes_at: string | null;
  created_at: string;
}

export const toDeviceBinding = (r: DeviceBindingRow): DeviceBinding => ({
  id: r.id,
  orgId: r.org_id,
  applicationId: r.application_id,
  agentId: r.agent_id,
  channel: r.channel,
  origin: r.origin,
  current:
    r.current_sequence === null
      ? null
      : { releaseId: r.current_release_id, version: r.current_version ?? '', sequence: r.current_sequence },
  desiredReleaseId: r.desired_release_id,
  forced: isSet(r.forced),
  state: r.state,
  error: r.error,
  activeJobId: r.active_job_id,
  lastReportAt: r.last_report_at,
  failedAttempts: r.failed_attempts,
  retryAt: r.retry_at,
  postponedReleaseId: r.postponed_release_id,
  cancelledJobId: r.cancelled_job_id,
  windowOpensAt: r.window_opens_at,
  windowClosesAt: r.window_closes_at,
  createdAt: r.created_at,
});

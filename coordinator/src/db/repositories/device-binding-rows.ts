import type { DeviceState } from '@drover/shared';
import type { DeviceBinding } from '../../domain/model/device-bindings.js';

export interface DeviceBindingRow {
  id: string;
  org_id: string;
  application_id: string;
  agent_id: string;
  channel: string;
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
  created_at: string;
}

export const toDeviceBinding = (r: DeviceBindingRow): DeviceBinding => ({
  id: r.id,
  orgId: r.org_id,
  applicationId: r.application_id,
  agentId: r.agent_id,
  channel: r.channel,
  current:
    r.current_sequence === null
      ? null
      : { releaseId: r.current_release_id, version: r.current_version ?? '', sequence: r.current_sequence },
  desiredReleaseId: r.desired_release_id,
  forced: r.forced === 1,
  state: r.state,
  error: r.error,
  activeJobId: r.active_job_id,
  lastReportAt: r.last_report_at,
  failedAttempts: r.failed_attempts,
  retryAt: r.retry_at,
  postponedReleaseId: r.postponed_release_id,
  cancelledJobId: r.cancelled_job_id,
  createdAt: r.created_at,
});

export const INSERT_BINDING_SQL = `INSERT INTO device_bindings (id, org_id, application_id, agent_id, channel,
    current_release_id, current_version, current_sequence, desired_release_id, forced, state, error, active_job_id,
    last_report_at, failed_attempts, retry_at, postponed_release_id, created_at)
  VALUES (@id, @orgId, @applicationId, @agentId, @channel, NULL, NULL, NULL, NULL, 0, NULL, NULL, NULL, NULL, 0, NULL,
    NULL, @createdAt)`;

/** Writes an evaluation's result (and a report's observations) back to the row. */
export const UPDATE_BINDING_SQL = `UPDATE device_bindings SET current_release_id = @currentReleaseId,
    current_version = @currentVersion, current_sequence = @currentSequence, desired_release_id = @desiredReleaseId,
    forced = @forced, state = @state, error = @error, active_job_id = @activeJobId, last_report_at = @lastReportAt,
    failed_attempts = @failedAttempts, retry_at = @retryAt, postponed_release_id = @postponedReleaseId,
    cancelled_job_id = @cancelledJobId
  WHERE id = @id`;

export const updateBindingParams = (b: DeviceBinding) => ({
  id: b.id,
  currentReleaseId: b.current?.releaseId ?? null,
  currentVersion: b.current?.version ?? null,
  currentSequence: b.current?.sequence ?? null,
  desiredReleaseId: b.desiredReleaseId,
  forced: b.forced ? 1 : 0,
  state: b.state,
  error: b.error,
  activeJobId: b.activeJobId,
  lastReportAt: b.lastReportAt,
  failedAttempts: b.failedAttempts,
  retryAt: b.retryAt,
  postponedReleaseId: b.postponedReleaseId,
  cancelledJobId: b.cancelledJobId,
});

import type { DeviceState } from '@drover/shared';
import type { DeviceBinding } from '../../../domain/model/device-bindings.js';
import type { Queryable } from '../pool.js';
import { all, run } from '../rows.js';

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
  forced: boolean;
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
  forced: r.forced,
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

/** Cancels a pending job; 1 when it was still pending. */
export const cancelPending = (db: Queryable, id: string, message: string, at: string) =>
  run(
    db,
    "UPDATE jobs SET status = 'cancelled', error_message = $2, finished_at = $3 WHERE id = $1 AND status = 'pending'",
    [id, message, at],
  );

/** Cancels the jobs still pending among `cancels`, in one statement; answers their ids. */
export async function cancelPendingJobs(
  db: Queryable,
  cancels: readonly { jobId: string; message: string; at: string }[],
): Promise<Set<string>> {
  if (cancels.length === 0) return new Set();
  const rows = await all<{ id: string }>(
    db,
    `UPDATE jobs j SET status = 'cancelled', error_message = t.message, finished_at = t.at
     FROM unnest($1::text[], $2::text[], $3::timestamptz[]) AS t(id, message, at)
     WHERE j.id = t.id AND j.id = ANY($1::text[]) AND j.status = 'pending' RETURNING j.id`,
    [cancels.map((c) => c.jobId), cancels.map((c) => c.message), cancels.map((c) => c.at)],
  );
  return new Set(rows.map((r) => r.id));
}

/** Writes bindings back (an evaluation's results, a report's observations), in one statement. */
export async function storeBindings(db: Queryable, bindings: readonly DeviceBinding[]): Promise<void> {
  if (bindings.length === 0) return;
  const column = <T>(value: (b: DeviceBinding) => T) => bindings.map(value);
  await run(
    db,
    `UPDATE device_bindings b SET current_release_id = t.current_release_id, current_version = t.current_version,
       current_sequence = t.current_sequence, desired_release_id = t.desired_release_id, forced = t.forced,
       state = t.state, error = t.error, active_job_id = t.active_job_id, last_report_at = t.last_report_at,
       failed_attempts = t.failed_attempts, retry_at = t.retry_at, postponed_release_id = t.postponed_release_id,
       cancelled_job_id = t.cancelled_job_id
     FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::text[], $6::boolean[], $7::text[], $8::text[],
       $9::text[], $10::timestamptz[], $11::bigint[], $12::timestamptz[], $13::text[], $14::text[])
       AS t(id, current_release_id, current_version, current_sequence, desired_release_id, forced, state, error,
         active_job_id, last_report_at, failed_attempts, retry_at, postponed_release_id, cancelled_job_id)
     WHERE b.id = t.id AND b.id = ANY($1::text[])`,
    [
      column((b) => b.id),
      column((b) => b.current?.releaseId ?? null),
      column((b) => b.current?.version ?? null),
      column((b) => b.current?.sequence ?? null),
      column((b) => b.desiredReleaseId),
      column((b) => b.forced),
      column((b) => b.state),
      column((b) => b.error),
      column((b) => b.activeJobId),
      column((b) => b.lastReportAt),
      column((b) => b.failedAttempts),
      column((b) => b.retryAt),
      column((b) => b.postponedReleaseId),
      column((b) => b.cancelledJobId),
    ],
  );
}

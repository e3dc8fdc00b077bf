import type { JobStatus } from '@drover/shared';
import type { PlanJobMessages } from '../../domain/model/chat-outbox.js';
import type { DecideLimits } from '../../domain/model/transaction-rules.js';
import type { AdmissionOutcome, AdmissionRequest, TriggerRunRepository } from '../../domain/model/trigger-runs.js';
import type { WindowCounts, WindowStarts } from '../../domain/model/rate-limits.js';
import { parseJsonColumn } from '../../util/json.js';
import type { Db } from '../database.js';
import type { WriteExecutor } from '../writer/executor.js';
import { createOutboxWrites } from './chat-outbox.js';
import { INSERT_OCCURRENCE_SQL } from './cron-occurrences.js';
import { INSERT_JOB_SQL, jobInsertParams } from './job-rows.js';

/** Expired idempotency keys and past window counters are deleted at most this often. */
const PURGE_EVERY_MS = 60_000;

type CountRow = [number | null, number | null, number | null];

/**
 * The admission as a write operation (db/writer/executor.ts): run serially inside the group
 * commit, so its read-decide-write needs no lock. The limits are the domain's to decide
 * (`decideLimits`) on the counts read here. A refused call's `rejected` job enqueues its chat
 * notification in the same operation (chat-outbox.ts).
 */
export function createAdmissionWrites(
  db: Db,
  decideLimits: DecideLimits,
  planMessages: PlanJobMessages,
): { admit(request: AdmissionRequest): AdmissionOutcome } {
  const outbox = createOutboxWrites(db, planMessages);
  const findKey = db.prepare<[string, string, string, string], { hash: string; jobId: string }>(
    `SELECT request_hash AS hash, job_id AS jobId FROM idempotency_keys
     WHERE trigger_id = ? AND workflow_name = ? AND key = ? AND expires_at > ?`,
  );
  const saveKey = db.prepare(
    `INSERT INTO idempotency_keys (trigger_id, workflow_name, key, request_hash, job_id, expires_at)
     VALUES (?, ?, ?, ?, ?, ?)
     ON CONFLICT (trigger_id, workflow_name, key) DO UPDATE SET
       request_hash = excluded.request_hash, job_id = excluded.job_id, expires_at = excluded.expires_at`,
  );
  const readCounts = db
    .prepare<{ scope: string; id: string; minute: number; hour: number; day: number }, CountRow>(
      `SELECT
         (SELECT count FROM rate_counters WHERE scope = @scope AND scope_id = @id AND window = 'minute' AND window_start = @minute),
         (SELECT count FROM rate_counters WHERE scope = @scope AND scope_id = @id AND window = 'hour' AND window_start = @hour),
         (SELECT count FROM rate_counters WHERE scope = @scope AND scope_id = @id AND window = 'day' AND window_start = @day)`,
    )
    .raw(true);
  const bumpCounts = db.prepare<{ scope: string; id: string; minute: number; hour: number; day: number }>(
    `INSERT INTO rate_counters (scope, scope_id, window, window_start, count)
     VALUES (@scope, @id, 'minute', @minute, 1), (@scope, @id, 'hour', @hour, 1), (@scope, @id, 'day', @day, 1)
     ON CONFLICT (scope, scope_id, window, window_start) DO UPDATE SET count = count + 1`,
  );
  const insertJob = db.prepare(INSERT_JOB_SQL);
  const insertBlock = db.prepare(
    `INSERT INTO rate_limit_blocks (org_id, workflow_id, trigger_id, api_token_id, job_id, window, limit_value, observed, created_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const purgeKeys = db.prepare('DELETE FROM idempotency_keys WHERE expires_at <= ?');
  // A counter of a window that is no longer the current one of its kind is past.
  const purgeCounts = db.prepare<WindowStarts>(
    `DELETE FROM rate_counters WHERE (window = 'minute' AND window_start < @minute)
       OR (window = 'hour' AND window_start < @hour) OR (window = 'day' AND window_start < @day)`,
  );
  const claimOccurrence = db.prepare(INSERT_OCCURRENCE_SQL);
  // `+?`: see INSERT_JOB_SQL (SQLite 3.54 and a bare parameter in an ORDER BY ... LIMIT 1 seek).
  const previousScheduledOpen = db
    .prepare<[string, string], number>(
      `SELECT status IN ('pending', 'queued', 'running') FROM jobs
       WHERE org_id = +? AND trigger_id = +? AND source = 'cron' ORDER BY seq DESC LIMIT 1`,
    )
    .pluck(true);
  let nextPurgeAt = 0;

  const counts = (scope: 'token' | 'workflow', id: string, starts: WindowStarts): WindowCounts => {
    const [minute, hour, day] = readCounts.get({ scope, id, ...starts }) as CountRow;
    return { minute: minute ?? 0, hour: hour ?? 0, day: day ?? 0 };
  };

  function admitNow(request: AdmissionRequest): AdmissionOutcome {
    const { job, now, idempotency } = request;
    const nowIso = job.createdAt;
    if (idempotency) {
      const earlier = findKey.get(job.triggerId, job.workflowName, idempotency.key, nowIso);
      if (earlier) {
        return earlier.hash === idempotency.requestHash
          ? { outcome: 'repeated', jobId: earlier.jobId }
          : { outcome: 'idempotency_conflict' };
      }
    }

    if (request.occurrence) {
      // The claim: the occurrence's row, written once whoever tries (its primary key).
      const { scheduledAt, overlap } = request.occurrence;
      const skip = overlap === 'skip' && previousScheduledOpen.get(job.orgId, job.triggerId) === 1;
      const claimed = claimOccurrence.run({
        triggerId: job.triggerId,
        scheduledAt,
        orgId: job.orgId,
        outcome: skip ? 'skipped' : 'job_created',
        jobId: skip ? null : job.id,
        reason: skip ? 'overlap' : null,
        firstScheduledAt: null,
        recordedAt: nowIso,
      });
      if (claimed.changes === 0) return { outcome: 'claimed_before' };
      if (skip) return { outcome: 'skipped_overlap' };
    }
    if (request.rejection !== undefined || job.workflowId === null) {
      insertJob.run(jobInsertParams(job, 'rejected', request.rejection ?? 'The workflow is unknown'));
      outbox.jobsEnded([job.id], nowIso, { atAdmission: true });
      return { outcome: 'rejected', jobId: job.id };
    }
    const workflowId = job.workflowId;

    const { windows, refused, counted } = decideLimits({ ...request, job: { ...job, workflowId } }, counts);
    if (now >= nextPurgeAt) {
      nextPurgeAt = now + PURGE_EVERY_MS;
      purgeKeys.run(nowIso);
      purgeCounts.run(windows);
    }
    if (refused) {
      insertJob.run(jobInsertParams(job, 'rejected', refused.message));
      outbox.jobsEnded([job.id], nowIso, { atAdmission: true });
      if (refused.scope === 'workflow') {
        insertBlock.run(
          job.orgId,
          workflowId,
          job.triggerId,
          job.apiTokenId,
          job.id,
          refused.refusal.window,
          refused.refusal.limit,
          refused.refusal.observed,
          nowIso,
        );
      }
      return { outcome: 'refused', jobId: job.id, ...refused };
    }

    insertJob.run(jobInsertParams(job, 'pending', null));
    for (const { scope, id } of counted) bumpCounts.run({ scope, id, ...windows });
    if (idempotency) {
      const expiresAt = new Date(now + idempotency.ttlMs).toISOString();
      saveKey.run(job.triggerId, job.workflowName, idempotency.key, idempotency.requestHash, job.id, expiresAt);
    }
    return { outcome: 'admitted', jobId: job.id };
  }

  return { admit: admitNow };
}

export function createTriggerRunRepository(
  db: Db,
  writes: WriteExecutor,
  decideLimits: DecideLimits,
  planMessages: PlanJobMessages,
): TriggerRunRepository {
  const result = db.prepare<
    [string],
    { status: JobStatus; exit_code: number | null; error_message: string | null; output: string | null }
  >('SELECT status, exit_code, error_message, output FROM jobs WHERE id = ?');
  const admission = createAdmissionWrites(db, decideLimits, planMessages);

  return {
    admit(request) {
      return writes.run(() => admission.admit(request));
    },
    async jobResult(jobId) {
      const row = result.get(jobId);
      if (!row) return null;
      return {
        status: row.status,
        exitCode: row.exit_code,
        errorMessage: row.error_message,
        output: parseJsonColumn<Record<string, unknown>>(row.output, 'jobs.output'),
      };
    },
  };
}

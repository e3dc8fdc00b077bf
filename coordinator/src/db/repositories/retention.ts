import type {
  DeleteBatch,
  Deleted,
  EndedStatus,
  RetentionOverrides,
  RetentionRepository,
} from '../../domain/model/retention.js';
import { all, command, query, run, type Database, type Flow } from '../sql/index.js';

interface OverrideRow {
  retention_jobs_days: number | null;
  retention_failed_jobs_days: number | null;
  retention_audit_days: number | null;
  retention_occurrences_days: number | null;
}

const toOverrides = (r: OverrideRow): RetentionOverrides => ({
  jobsDays: r.retention_jobs_days,
  failedJobsDays: r.retention_failed_jobs_days,
  auditDays: r.retention_audit_days,
  occurrencesDays: r.retention_occurrences_days,
});

const OVERRIDE_COLUMNS =
  'retention_jobs_days, retention_failed_jobs_days, retention_audit_days, retention_occurrences_days';
const ORGANIZATIONS = query<OverrideRow & { id: string }, []>(`SELECT id, ${OVERRIDE_COLUMNS} FROM orgs ORDER BY id`);
const OVERRIDES_OF = query<OverrideRow, [string]>(`SELECT ${OVERRIDE_COLUMNS} FROM orgs WHERE id = ?`);
/** Each column given (its flag 1) takes its value; the others keep theirs, as this statement reads them. */
const CHANGE_OVERRIDES = query<
  OverrideRow,
  [number, number | null, number, number | null, number, number | null, number, number | null, string]
>(
  `UPDATE orgs SET
     retention_jobs_days = CASE WHEN ? = 1 THEN ? ELSE retention_jobs_days END,
     retention_failed_jobs_days = CASE WHEN ? = 1 THEN ? ELSE retention_failed_jobs_days END,
     retention_audit_days = CASE WHEN ? = 1 THEN ? ELSE retention_audit_days END,
     retention_occurrences_days = CASE WHEN ? = 1 THEN ? ELSE retention_occurrences_days END
   WHERE id = ? RETURNING ${OVERRIDE_COLUMNS}`,
);

/**
 * The organization's oldest jobs that ended with the status before the cutoff, with how many log
 * lines each holds; never the organization's newest job (the next one's number is its number
 * plus one), one a device binding still names, one of a batch still open (its counts and its
 * message are read from its jobs when it ends), nor an update job of a release whose rollout is
 * running or paused (its waves count their failures from those jobs: without them a bad wave
 * would never pause, and a device that gave up would never count as ended). One status at a time and in the order of
 * jobs_org_ended, so that the index is the plan (with every status in one IN list and no order,
 * SQLite's planner chose a scan of the table: a batch read 20-60 ms over a million jobs), and
 * `+j.number` so that the number's index is not (it walked past every job kept longer).
 */
const ENDED_JOBS = query<{ id: string; lines: number }, [string, EndedStatus, string, string, number]>(
  `SELECT j.id, COALESCE(u.lines, 0) AS lines FROM jobs j LEFT JOIN job_log_usage u ON u.job_id = j.id
   WHERE j.org_id = ? AND j.status = ? AND j.finished_at < ?
     AND +j.number < (SELECT max(number) FROM jobs WHERE org_id = ?)
     AND NOT EXISTS (SELECT 1 FROM device_bindings b WHERE b.active_job_id = j.id)
     AND NOT EXISTS (SELECT 1 FROM batches o WHERE o.id = j.batch_id AND o.ended_at IS NULL)
     AND NOT EXISTS (SELECT 1 FROM update_jobs uj JOIN rollouts r ON r.release_id = uj.release_id
                     WHERE uj.job_id = j.id AND r.status IN ('running', 'paused'))
   ORDER BY j.finished_at
   LIMIT ?`,
);
/** The first of a job's log lines, for a log too long to go in one batch with its job. */
const DELETE_FIRST_LINES = command<[string, string, number]>(
  'DELETE FROM job_logs WHERE job_id = ? AND seq IN (SELECT seq FROM job_logs WHERE job_id = ? ORDER BY seq LIMIT ?)',
);
const SHRINK_USAGE = command<[number, number, string]>(
  'UPDATE job_log_usage SET lines = lines - ?, bytes = CASE WHEN lines = ? THEN 0 ELSE bytes END WHERE job_id = ?',
);
const DELETE_BLOCKS_OF = command<[string]>((d) => `DELETE FROM rate_limit_blocks WHERE job_id ${d.inJsonArray('?')}`);
/** Deleted before their jobs to be counted as deleted, not as the usage read before said. */
const DELETE_LOGS_OF = command<[string]>((d) => `DELETE FROM job_logs WHERE job_id ${d.inJsonArray('?')}`);
// Their log usage, OTA update rows and chat messages go with them (ON DELETE CASCADE).
const DELETE_JOBS = command<[string]>((d) => `DELETE FROM jobs WHERE id ${d.inJsonArray('?')}`);
/** Jobs read at most per batch, however many rows it may delete. */
const MAX_JOBS_PER_BATCH = 1000;

/** The newest entry stays: SQLite gives the next one its id plus one. */
const DELETE_AUDIT = command<[string, string, number]>(
  `DELETE FROM audit_log WHERE id IN (
     SELECT id FROM audit_log WHERE org_id = ? AND created_at < ? AND +id < (SELECT max(id) FROM audit_log) LIMIT ?)`,
);
const DELETE_SERVER_AUDIT = command<[string, number]>(
  `DELETE FROM audit_log WHERE id IN (
     SELECT id FROM audit_log WHERE org_id IS NULL AND created_at < ? AND +id < (SELECT max(id) FROM audit_log) LIMIT ?)`,
);
/** A trigger's newest occurrence stays: the scheduler counts what it missed from it. */
const DELETE_OCCURRENCES = command<[string, string, number]>(
  `DELETE FROM cron_occurrences WHERE (trigger_id, scheduled_at) IN (
     SELECT o.trigger_id, o.scheduled_at FROM cron_occurrences o
     WHERE o.org_id = ? AND o.scheduled_at < ?
       AND o.scheduled_at < (SELECT max(m.scheduled_at) FROM cron_occurrences m WHERE m.trigger_id = o.trigger_id)
     LIMIT ?)`,
);
/** A batch goes once none of its jobs is left; the organization's newest stays (numbers). */
const DELETE_BATCHES = command<[string, string, string, number]>(
  `DELETE FROM batches WHERE id IN (
     SELECT b.id FROM batches b
     WHERE b.org_id = ? AND b.ended_at < ?
       AND +b.number < (SELECT max(number) FROM batches WHERE org_id = ?)
       AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.batch_id = b.id)
     LIMIT ?)`,
);
const DELETE_ROLLOUT_EVENTS = command<[string, string, number]>(
  `DELETE FROM rollout_events WHERE (release_id, seq) IN (
     SELECT e.release_id, e.seq FROM rollout_events e JOIN rollouts r ON r.release_id = e.release_id
     WHERE r.org_id = ? AND r.ended_at IS NOT NULL AND r.ended_at < ?
     LIMIT ?)`,
);

const SIZE = query<{ bytes: number; free_bytes: number | null }, []>((d) => d.databaseSize);

const NONE: Readonly<Deleted> = { jobs: 0, logLines: 0, auditEntries: 0, occurrences: 0, batches: 0, rolloutEvents: 0 };

/**
 * At most `rows` rows (a job counts one, and each of its log lines one): the oldest jobs whose
 * logs fit, or, when the first job's log alone does not, the first `rows` lines of its log.
 */
function* deleteJobs(orgId: string, status: EndedStatus, before: string, rows: number): Flow<DeleteBatch> {
  const candidates = yield* all(ENDED_JOBS, [orgId, status, before, orgId, Math.min(rows, MAX_JOBS_PER_BATCH)]);
  const first = candidates[0];
  if (!first) return { deleted: NONE, more: false };
  const firstLines = Number(first.lines);
  if (firstLines + 1 > rows) {
    const logLines = yield* run(DELETE_FIRST_LINES, [first.id, first.id, rows]);
    if (logLines > 0) {
      yield* run(SHRINK_USAGE, [logLines, logLines, first.id]);
      return { deleted: { ...NONE, logLines }, more: true };
    }
  }
  const chosen: string[] = [];
  let used = 0;
  for (const c of candidates) {
    const lines = Number(c.lines);
    if (chosen.length > 0 && used + lines + 1 > rows) break;
    chosen.push(c.id);
    used += lines + 1;
  }
  const list = JSON.stringify(chosen);
  yield* run(DELETE_BLOCKS_OF, [list]);
  // The lines there are now: another coordinator's sweep may have deleted some since the read.
  const logLines = yield* run(DELETE_LOGS_OF, [list]);
  const jobs = yield* run(DELETE_JOBS, [list]);
  const more = chosen.length < candidates.length || candidates.length === Math.min(rows, MAX_JOBS_PER_BATCH);
  return { deleted: { ...NONE, jobs, logLines }, more };
}

/** A batch of a simple delete: more may be left when it deleted as many as it was allowed. */
const batchOf = (deleted: Deleted, n: number, limit: number): DeleteBatch => ({ deleted, more: n >= limit });

export function createRetentionRepository(db: Database): RetentionRepository {
  return {
    async organizations() {
      return (await db.all(ORGANIZATIONS, [])).map((r) => ({ orgId: r.id, overrides: toOverrides(r) }));
    },
    async overridesOf(orgId) {
      const row = await db.one(OVERRIDES_OF, [orgId]);
      return row ? toOverrides(row) : null;
    },
    async changeOverrides(orgId, change) {
      const given = (value: number | null | undefined): [number, number | null] =>
        value === undefined ? [0, null] : [1, value];
      const row = await db.one(CHANGE_OVERRIDES, [
        ...given(change.jobsDays),
        ...given(change.failedJobsDays),
        ...given(change.auditDays),
        ...given(change.occurrencesDays),
        orgId,
      ]);
      return row ? toOverrides(row) : null;
    },
    deleteJobs(orgId, status, before, limit) {
      return db.transaction(() => deleteJobs(orgId, status, before, limit));
    },
    async deleteAudit(orgId, before, limit) {
      const auditEntries =
        orgId === null
          ? await db.run(DELETE_SERVER_AUDIT, [before, limit])
          : await db.run(DELETE_AUDIT, [orgId, before, limit]);
      return batchOf({ ...NONE, auditEntries }, auditEntries, limit);
    },
    async deleteOccurrences(orgId, before, limit) {
      const occurrences = await db.run(DELETE_OCCURRENCES, [orgId, before, limit]);
      return batchOf({ ...NONE, occurrences }, occurrences, limit);
    },
    async deleteBatches(orgId, before, limit) {
      const batches = await db.run(DELETE_BATCHES, [orgId, before, orgId, limit]);
      return batchOf({ ...NONE, batches }, batches, limit);
    },
    async deleteRolloutEvents(orgId, before, limit) {
      const rolloutEvents = await db.run(DELETE_ROLLOUT_EVENTS, [orgId, before, limit]);
      return batchOf({ ...NONE, rolloutEvents }, rolloutEvents, limit);
    },
    async databaseSize() {
      const row = await db.one(SIZE, []);
      return {
        engine: db.dialect.name,
        bytes: Number(row?.bytes ?? 0),
        freeBytes: row?.free_bytes === null || row?.free_bytes === undefined ? null : Number(row.free_bytes),
      };
    },
  };
}

import type { JobStatus } from '@drover/shared';
import type {
  CronOccurrence,
  CronOccurrenceRepository,
  OccurrenceOutcome,
  SkipReason,
} from '../../domain/model/cron-occurrences.js';
import type { Db } from '../database.js';
import type { WriteExecutor } from '../writer/executor.js';

interface OccurrenceRow {
  trigger_id: string;
  scheduled_at: string;
  outcome: OccurrenceOutcome;
  job_id: string | null;
  job_status: JobStatus | null;
  reason: SkipReason | null;
  first_scheduled_at: string | null;
  recorded_at: string;
}

const toOccurrence = (r: OccurrenceRow): CronOccurrence => ({
  triggerId: r.trigger_id,
  scheduledAt: r.scheduled_at,
  outcome: r.outcome,
  jobId: r.job_id,
  jobStatus: r.job_status,
  reason: r.reason,
  firstScheduledAt: r.first_scheduled_at,
  recordedAt: r.recorded_at,
});

/** The statement that claims an occurrence; the admission uses it inside its write (trigger-runs.ts). */
export const INSERT_OCCURRENCE_SQL = `INSERT INTO cron_occurrences
  (trigger_id, scheduled_at, org_id, outcome, job_id, reason, first_scheduled_at, recorded_at)
  VALUES (@triggerId, @scheduledAt, @orgId, @outcome, @jobId, @reason, @firstScheduledAt, @recordedAt)
  ON CONFLICT (trigger_id, scheduled_at) DO NOTHING`;

export function createCronOccurrenceRepository(db: Db, writes: WriteExecutor): CronOccurrenceRepository {
  const insert = db.prepare(INSERT_OCCURRENCE_SQL);
  const latest = db
    .prepare<[string], string>('SELECT max(scheduled_at) FROM cron_occurrences WHERE trigger_id = ?')
    .pluck(true);
  const select = `SELECT o.trigger_id, o.scheduled_at, o.outcome, o.job_id, j.status AS job_status, o.reason,
      o.first_scheduled_at, o.recorded_at
    FROM cron_occurrences o LEFT JOIN jobs j ON j.id = o.job_id`;
  const page = db.prepare<[string, number], OccurrenceRow>(
    `${select} WHERE o.trigger_id = ? ORDER BY o.scheduled_at DESC LIMIT ?`,
  );
  const pageBefore = db.prepare<[string, string, number], OccurrenceRow>(
    `${select} WHERE o.trigger_id = ? AND o.scheduled_at < ? ORDER BY o.scheduled_at DESC LIMIT ?`,
  );
  return {
    recordSkipped(rows) {
      if (rows.length === 0) return Promise.resolve(0);
      return writes.run(() => {
        let added = 0;
        for (const row of rows) {
          added += insert.run({ ...row, outcome: 'skipped', jobId: null }).changes;
        }
        return added;
      });
    },
    async latestScheduledAt(triggerId) {
      return latest.get(triggerId) ?? null;
    },
    async list(triggerId, { limit, before }) {
      const rows = before === undefined ? page.all(triggerId, limit) : pageBefore.all(triggerId, before, limit);
      return rows.map(toOccurrence);
    },
  };
}

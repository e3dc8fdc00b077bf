import type { JobStatus } from '@drover/shared';
import type {
  CronOccurrence,
  CronOccurrenceRepository,
  OccurrenceOutcome,
  SkipReason,
} from '../../../domain/model/cron-occurrences.js';
import type { PgPool, Queryable } from '../pool.js';
import { all, one, run } from '../rows.js';
import { inTransaction } from '../transaction.js';

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

export interface OccurrenceClaim {
  triggerId: string;
  scheduledAt: string;
  orgId: string;
  outcome: OccurrenceOutcome;
  jobId: string | null;
  reason: SkipReason | null;
  firstScheduledAt: string | null;
  recordedAt: string;
}

/**
 * Writes an occurrence's row unless one is there: whichever coordinator writes it first has
 * claimed the occurrence (its primary key); a second writer waits for the first's commit and
 * writes nothing. 1 when this call claimed it. The admission uses it too (trigger-runs.ts).
 */
export const claimOccurrence = (db: Queryable, o: OccurrenceClaim): Promise<number> =>
  run(
    db,
    `INSERT INTO cron_occurrences
       (trigger_id, scheduled_at, org_id, outcome, job_id, reason, first_scheduled_at, recorded_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
     ON CONFLICT (trigger_id, scheduled_at) DO NOTHING`,
    [o.triggerId, o.scheduledAt, o.orgId, o.outcome, o.jobId, o.reason, o.firstScheduledAt, o.recordedAt],
  );

const SELECT = `SELECT o.trigger_id, o.scheduled_at, o.outcome, o.job_id, j.status AS job_status, o.reason,
    o.first_scheduled_at, o.recorded_at
  FROM cron_occurrences o LEFT JOIN jobs j ON j.id = o.job_id`;

export function createCronOccurrenceRepository(pool: PgPool): CronOccurrenceRepository {
  return {
    async recordSkipped(rows) {
      if (rows.length === 0) return 0;
      return inTransaction(pool, async (tx) => {
        let added = 0;
        for (const row of rows) added += await claimOccurrence(tx, { ...row, outcome: 'skipped', jobId: null });
        return added;
      });
    },
    async latestScheduledAt(triggerId) {
      const row = await one<{ at: string | null }>(
        pool,
        'SELECT max(scheduled_at) AS at FROM cron_occurrences WHERE trigger_id = $1',
        [triggerId],
      );
      return row?.at ?? null;
    },
    async list(triggerId, { limit, before }) {
      const rows = await all<OccurrenceRow>(
        pool,
        `${SELECT} WHERE o.trigger_id = $1 AND ($2::timestamptz IS NULL OR o.scheduled_at < $2)
         ORDER BY o.scheduled_at DESC LIMIT $3`,
        [triggerId, before ?? null, limit],
      );
      return rows.map(toOccurrence);
    },
  };
}

import type { JobStatus } from '@drover/shared';
import type {
  CronOccurrence,
  CronOccurrenceRepository,
  OccurrenceOutcome,
  SkipReason,
} from '../../domain/model/cron-occurrences.js';
import { command, query, run, values, type Database } from '../sql/index.js';

interface OccurrenceRow {
  trigger_id: string;
  scheduled_at: string;
  outcome: OccurrenceOutcome;
  job_id: string | null;
  batch_id: string | null;
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
  batchId: r.batch_id,
  jobStatus: r.job_status,
  reason: r.reason,
  firstScheduledAt: r.first_scheduled_at,
  recordedAt: r.recorded_at,
});

/** An occurrence's row, written by whoever claims the occurrence. */
export interface OccurrenceClaim {
  triggerId: string;
  scheduledAt: string;
  orgId: string;
  outcome: OccurrenceOutcome;
  jobId: string | null;
  /** With job_created on a `fanout: all` trigger: the batch (its jobId is null). */
  batchId?: string | null;
  reason: SkipReason | null;
  firstScheduledAt: string | null;
  recordedAt: string;
}

/**
 * Writes an occurrence's row unless one is there: whichever writes it first has claimed the
 * occurrence (its primary key); on PostgreSQL a second writer waits for the first's commit and
 * writes nothing. Changes 1 row when this call claimed it. The admission runs it too (trigger-runs.ts).
 */
export const CLAIM_OCCURRENCE = command<OccurrenceClaim>(
  `INSERT INTO cron_occurrences
     (trigger_id, scheduled_at, org_id, outcome, job_id, batch_id, reason, first_scheduled_at, recorded_at)
   VALUES (@triggerId, @scheduledAt, @orgId, @outcome, @jobId, @batchId, @reason, @firstScheduledAt, @recordedAt)
   ON CONFLICT (trigger_id, scheduled_at) DO NOTHING`,
);

const LATEST = values<string | null, [string]>('SELECT max(scheduled_at) FROM cron_occurrences WHERE trigger_id = ?');
const SELECT = `SELECT o.trigger_id, o.scheduled_at, o.outcome, o.job_id, o.batch_id, j.status AS job_status, o.reason,
    o.first_scheduled_at, o.recorded_at
  FROM cron_occurrences o LEFT JOIN jobs j ON j.id = o.job_id`;
const PAGE = query<OccurrenceRow, [string, number]>(
  `${SELECT} WHERE o.trigger_id = ? ORDER BY o.scheduled_at DESC LIMIT ?`,
);
const PAGE_BEFORE = query<OccurrenceRow, [string, string, number]>(
  `${SELECT} WHERE o.trigger_id = ? AND o.scheduled_at < ? ORDER BY o.scheduled_at DESC LIMIT ?`,
);

export function createCronOccurrenceRepository(db: Database): CronOccurrenceRepository {
  return {
    async recordSkipped(rows) {
      if (rows.length === 0) return 0;
      return db.write(function* () {
        let added = 0;
        for (const row of rows)
          added += yield* run(CLAIM_OCCURRENCE, { ...row, outcome: 'skipped', jobId: null, batchId: null });
        return added;
      });
    },
    async latestScheduledAt(triggerId) {
      return (await db.one(LATEST, [triggerId])) ?? null;
    },
    async list(triggerId, { limit, before }) {
      const rows =
        before === undefined
          ? await db.all(PAGE, [triggerId, limit])
          : await db.all(PAGE_BEFORE, [triggerId, before, limit]);
      return rows.map(toOccurrence);
    },
  };
}

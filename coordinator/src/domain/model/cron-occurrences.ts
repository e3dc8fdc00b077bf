import type { JobStatus } from '@drover/shared';

/** What happened at an occurrence of a cron trigger's schedule (docs/schedules.md). */
export const OCCURRENCE_OUTCOMES = ['job_created', 'skipped'] as const;
export type OccurrenceOutcome = (typeof OCCURRENCE_OUTCOMES)[number];
/**
 * Why an occurrence made no job: `overlap` (the previous scheduled job was still open),
 * `missed` (nothing fired it in time: the coordinator was down or late), `disabled` (the trigger
 * was disabled at that instant and enabled since).
 */
export const SKIP_REASONS = ['overlap', 'missed', 'disabled'] as const;
export type SkipReason = (typeof SKIP_REASONS)[number];

/** The record of one occurrence (or of a run of missed ones), as stored. */
export interface CronOccurrence {
  triggerId: string;
  /** ISO 8601 UTC; for a run of missed occurrences, the last of them. */
  scheduledAt: string;
  outcome: OccurrenceOutcome;
  jobId: string | null;
  /** The batch the occurrence made (a `fanout: all` trigger, docs/fleets.md); null otherwise. */
  batchId: string | null;
  /** The job's status now (null without a job, or when the job is gone). */
  jobStatus: JobStatus | null;
  reason: SkipReason | null;
  /** A row standing for a run of missed occurrences: the first of them; null otherwise. */
  firstScheduledAt: string | null;
  recordedAt: string;
}

/** A skipped occurrence to record. */
export interface SkippedOccurrence {
  triggerId: string;
  orgId: string;
  scheduledAt: string;
  reason: SkipReason;
  firstScheduledAt: string | null;
  recordedAt: string;
}

export interface CronOccurrenceRepository {
  /**
   * Records skipped occurrences in one transaction; an occurrence already recorded (claimed by
   * another scheduler) is left as it is. Resolves with how many rows were new.
   */
  recordSkipped(rows: readonly SkippedOccurrence[]): Promise<number>;
  /** The scheduled instant of the trigger's newest record, or null. */
  latestScheduledAt(triggerId: string): Promise<string | null>;
  /** The trigger's records, newest first; `before`: only those scheduled before this instant. */
  list(triggerId: string, options: { limit: number; before?: string | undefined }): Promise<CronOccurrence[]>;
}

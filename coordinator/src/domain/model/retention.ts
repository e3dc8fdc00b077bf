/**
 * How long an organization keeps what it no longer uses (docs/operations.md, "Retention"), in
 * days: ended jobs with their log lines (`jobsDays`: success, cancelled, rejected;
 * `failedJobsDays`: failed, timed out), audit entries, cron occurrences.
 */
export interface Retention {
  jobsDays: number;
  failedJobsDays: number;
  auditDays: number;
  occurrencesDays: number;
}

/** An organization's own values; null: the coordinator's setting applies. */
export type RetentionOverrides = { [K in keyof Retention]: number | null };

/** What one deleting batch removed, by kind of row (the metric's `kind` label). */
export interface Deleted {
  jobs: number;
  logLines: number;
  auditEntries: number;
  occurrences: number;
  batches: number;
  rolloutEvents: number;
}

/** Nothing deleted: a new object each call (a sweep adds to it). */
export const nothingDeleted = (): Deleted => ({
  jobs: 0,
  logLines: 0,
  auditEntries: 0,
  occurrences: 0,
  batches: 0,
  rolloutEvents: 0,
});

export const DELETED_KINDS = ['jobs', 'logLines', 'auditEntries', 'occurrences', 'batches', 'rolloutEvents'] as const;

/** What one deleting batch removed, and whether more may be left to delete. */
export interface DeleteBatch {
  deleted: Deleted;
  more: boolean;
}

/** The statuses of ended jobs: `jobsDays` applies to the first three, `failedJobsDays` to the others. */
export const ENDED_STATUSES = ['success', 'cancelled', 'rejected', 'failed', 'timed_out'] as const;
export type EndedStatus = (typeof ENDED_STATUSES)[number];

export interface DatabaseSize {
  engine: 'sqlite' | 'postgres';
  /** The database's size on disk now (SQLite: the file with its write-ahead log; PostgreSQL: pg_database_size). */
  bytes: number;
  /** SQLite: bytes of free pages inside the file, which VACUUM would return to the disk (null on PostgreSQL). */
  freeBytes: number | null;
}

/**
 * What the retention sweep reads and deletes (domain/retention/). Every delete is one short
 * transaction of at most `limit` rows of the named kind, the oldest first, and keeps what numbers
 * or ordering depend on: an organization's newest job and newest batch (their numbers count on
 * from them), a trigger's newest cron occurrence (the scheduler counts missed occurrences from it),
 * the newest audit entry, and any job an OTA device still names as its active one.
 */
export interface RetentionRepository {
  /** Every organization with its overrides. */
  organizations(): Promise<{ orgId: string; overrides: RetentionOverrides }[]>;
  overridesOf(orgId: string): Promise<RetentionOverrides | null>;
  /**
   * Sets the fields given of the organization's overrides, the others as they are, in one
   * statement (changes of different fields at once all stay); the overrides after it, null when
   * there is no such organization.
   */
  changeOverrides(orgId: string, change: Partial<RetentionOverrides>): Promise<RetentionOverrides | null>;
  /**
   * Jobs that ended with `status` before `before` (the oldest first), with their log lines and what names them:
   * at most `rows` rows, a job and each of its log lines counting one (a log longer than that goes
   * over several batches before its job).
   */
  deleteJobs(orgId: string, status: EndedStatus, before: string, rows: number): Promise<DeleteBatch>;
  /** Audit entries created before `before`; `orgId` null: the coordinator's own (no organization). */
  deleteAudit(orgId: string | null, before: string, limit: number): Promise<DeleteBatch>;
  deleteOccurrences(orgId: string, before: string, limit: number): Promise<DeleteBatch>;
  /** Batches that ended before `before` and have no job left. */
  deleteBatches(orgId: string, before: string, limit: number): Promise<DeleteBatch>;
  /** The history of rollouts that ended (completed, aborted, superseded) before `before`. */
  deleteRolloutEvents(orgId: string, before: string, limit: number): Promise<DeleteBatch>;
  databaseSize(): Promise<DatabaseSize>;
}

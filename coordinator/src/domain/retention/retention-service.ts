import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { notFound } from '../../errors.js';
import { isoAt, type Clock } from '../../util/clock.js';
import type { AuditLog } from '../audit/audit-log.js';
import type { DatabaseSize, DeleteBatch, Deleted, RetentionRepository } from '../model/retention.js';
import { DELETED_KINDS, ENDED_STATUSES, nothingDeleted } from '../model/retention.js';
import {
  effectiveRetention,
  isRetentionDays,
  NO_OVERRIDES,
  RETENTION_FIELDS,
  retentionChange,
  retentionCutoff,
  type Retention,
  type RetentionOverrides,
} from './retention-settings.js';

/**
 * A deleting batch aims at this long a hold of the database (sized from the last one's time), and
 * the sweep then rests REST_FACTOR times as long as the batch took: it takes at most a third of
 * the event loop and the database (the rest is the requests' and the WAL checkpoint thread's), and
 * a request arriving during a batch waits a few milliseconds at most.
 */
export const TARGET_BATCH_MS = 5;
const REST_FACTOR = 2;
/** Rows per deleting batch (a job and each of its log lines count one): the first, and the bounds the sizing keeps to. */
const FIRST_BATCH = 100;
const MIN_BATCH = 10;
const MAX_BATCH = 50_000;
/** The first sweep runs this long after start (or the sweep interval, if shorter). */
export const FIRST_SWEEP_DELAY_MS = 30_000;

export interface RetentionLogger {
  info(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export interface RetentionMetrics {
  /** Rows one deleting batch removed, by kind. */
  retentionDeleted(kind: keyof Deleted, rows: number): void;
  /** How long one deleting batch held the database. */
  retentionBatch(seconds: number): void;
}

export interface RetentionDeps {
  repo: RetentionRepository;
  /** The coordinator's settings (DROVER_RETENTION_*). */
  defaults: Readonly<Retention>;
  clock: Clock;
  audit: Pick<AuditLog, 'record'>;
  logger: RetentionLogger;
  metrics: RetentionMetrics;
  /** DROVER_RETENTION_SWEEP_SECONDS */
  sweepSeconds: number;
  /**
   * Resolves when the database can take more deletes (on SQLite: the WAL's checkpoint caught up),
   * awaited before each batch; absent: at once.
   */
  settled?: () => Promise<void>;
}

/** One sweep: what it deleted, how long it took, and the longest hold of one of its batches. */
export interface SweepReport {
  startedAt: string;
  deleted: Deleted;
  durationMs: number;
  longestBatchMs: number;
  batches: number;
}

/** An organization's retention as its settings page shows it. */
export interface RetentionView {
  /** What applies. */
  retention: Retention;
  /** The organization's own values (null: the coordinator's). */
  overrides: RetentionOverrides;
  /** The coordinator's settings. */
  defaults: Retention;
  database: DatabaseSize;
  /**
   * The last sweep this coordinator ran since it started (what it deleted: this organization's
   * rows; its time and batches: the whole sweep's); null before the first.
   */
  lastSweep: SweepReport | null;
}

/**
 * What Drover keeps (docs/operations.md, "Retention"): each organization's settings, and the
 * sweep that deletes what is past them, in the background, in small batches each of which holds
 * the database for about TARGET_BATCH_MS (sized from the previous batch's time), yielding to
 * requests between them.
 */
export class RetentionService {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> = Promise.resolve();
  private sweeping: Promise<SweepReport> | null = null;
  private stopped = false;
  private last: SweepReport | null = null;
  /** What the last sweep deleted of each organization's (the view shows an organization its own). */
  private lastByOrg = new Map<string, Deleted>();

  constructor(private readonly deps: RetentionDeps) {}

  /** The organization's retention, its overrides, the coordinator's settings and the database's size. */
  async view(orgId: string): Promise<RetentionView> {
    const overrides = await this.deps.repo.overridesOf(orgId);
    if (!overrides) throw notFound('Organization');
    return {
      retention: effectiveRetention(this.deps.defaults, overrides),
      overrides,
      defaults: { ...this.deps.defaults },
      database: await this.deps.repo.databaseSize(),
      lastSweep: this.last && { ...this.last, deleted: this.lastByOrg.get(orgId) ?? nothingDeleted() },
    };
  }

  /** What applies to the organization (the org view's `retention`). */
  async effective(orgId: string): Promise<Retention> {
    return effectiveRetention(this.deps.defaults, (await this.deps.repo.overridesOf(orgId)) ?? NO_OVERRIDES);
  }

  /**
   * An owner's change: the fields given replace the organization's values (null: the coordinator's
   * setting again); applies to existing data at the next sweep. Audited as `org.retention.update`;
   * a change that gives every field the value it has is no change, and is not audited.
   */
  async update(orgId: string, userId: string, change: Record<string, unknown>): Promise<Retention> {
    const fields = retentionChange(change);
    const current = await this.deps.repo.overridesOf(orgId);
    if (!current) throw notFound('Organization');
    const given = Object.entries(fields) as [keyof RetentionOverrides, number | null][];
    if (given.every(([field, value]) => current[field] === value)) {
      return effectiveRetention(this.deps.defaults, current);
    }
    // Only the fields given are written, in one statement: two owners' changes of different
    // fields at once both stay (a read, then a write of every field, kept only the last one's).
    const next = await this.deps.repo.changeOverrides(orgId, fields);
    if (!next) throw notFound('Organization');
    await this.deps.audit.record({
      orgId,
      actorType: 'user',
      actorId: userId,
      action: 'org.retention.update',
      targetType: 'org',
      targetId: orgId,
      metadata: { retention: change },
    });
    return effectiveRetention(this.deps.defaults, next);
  }

  /** Sweeps within a minute of start, then every DROVER_RETENTION_SWEEP_SECONDS. */
  start(): void {
    const interval = this.deps.sweepSeconds * 1000;
    const schedule = (ms: number) => {
      this.timer = setTimeout(() => {
        this.running = this.sweep()
          .catch((error: unknown) => this.deps.logger.error({ err: error }, 'retention sweep failed'))
          .finally(() => {
            if (!this.stopped) schedule(interval);
          });
      }, ms);
      this.timer.unref();
    };
    schedule(Math.min(FIRST_SWEEP_DELAY_MS, interval));
  }

  /** Stops the timer and waits for a sweep in progress (it ends after its current batch). */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running.catch(() => undefined);
    await this.sweeping?.catch(() => undefined);
  }

  /**
   * One sweep over every organization (a sweep asked for while one runs is that one). Logs a line
   * when it deleted something.
   */
  sweep(): Promise<SweepReport> {
    this.sweeping ??= this.sweepOnce().finally(() => {
      this.sweeping = null;
    });
    return this.sweeping;
  }

  private async sweepOnce(): Promise<SweepReport> {
    const started = performance.now();
    const now = this.deps.clock.now();
    const report: SweepReport = {
      startedAt: isoAt(now),
      deleted: nothingDeleted(),
      durationMs: 0,
      longestBatchMs: 0,
      batches: 0,
    };
    const { repo } = this.deps;
    const orgs = await repo.organizations();
    const byOrg = new Map<string, Deleted>();
    for (const { orgId, overrides } of orgs) {
      const ofOrg = nothingDeleted();
      byOrg.set(orgId, ofOrg);
      const drain = (del: (limit: number) => Promise<DeleteBatch>) => this.drain(report, del, ofOrg);
      const r = effectiveRetention(this.deps.defaults, overrides);
      // A setting that is no number of days (only a damaged or hand-edited database holds one: the
      // API refuses it) has no cutoff: the organization's data is kept, the others' swept.
      const damaged = RETENTION_FIELDS.find((field) => !isRetentionDays(r[field]));
      if (damaged !== undefined) {
        this.deps.logger.error(
          { orgId, field: damaged },
          "retention: an organization's stored setting is not a whole number of days; its data is not swept",
        );
        continue;
      }
      const jobsBefore = retentionCutoff(now, r.jobsDays);
      const failedBefore = retentionCutoff(now, r.failedJobsDays);
      const auditBefore = retentionCutoff(now, r.auditDays);
      for (const status of ENDED_STATUSES) {
        const before = status === 'failed' || status === 'timed_out' ? failedBefore : jobsBefore;
        await drain((n) => repo.deleteJobs(orgId, status, before, n));
      }
      // A batch goes once its jobs are gone, and no sooner than the jobs that ended with it.
      await drain((n) => repo.deleteBatches(orgId, jobsBefore, n));
      await drain((n) => repo.deleteOccurrences(orgId, retentionCutoff(now, r.occurrencesDays), n));
      await drain((n) => repo.deleteAudit(orgId, auditBefore, n));
      await drain((n) => repo.deleteRolloutEvents(orgId, auditBefore, n));
      if (this.stopped) break;
    }
    // The coordinator's own entries (no organization) keep to its setting.
    const serverAuditBefore = retentionCutoff(now, this.deps.defaults.auditDays);
    await this.drain(report, (n) => repo.deleteAudit(null, serverAuditBefore, n), nothingDeleted());

    report.durationMs = performance.now() - started;
    this.last = report;
    this.lastByOrg = byOrg;
    const total = DELETED_KINDS.reduce((sum, kind) => sum + report.deleted[kind], 0);
    if (total > 0) {
      this.deps.logger.info(
        {
          deleted: report.deleted,
          durationMs: Math.round(report.durationMs),
          longestBatchMs: Number(report.longestBatchMs.toFixed(1)),
          batches: report.batches,
        },
        `retention sweep deleted ${total.toLocaleString('en-US')} rows past their organizations' retention`,
      );
    }
    return report;
  }

  /**
   * Deletes batch after batch until one comes back short, sizing each from the last one's time so
   * that one holds the database for about TARGET_BATCH_MS, and letting requests run in between.
   */
  private async drain(
    report: SweepReport,
    del: (limit: number) => Promise<DeleteBatch>,
    ofOrg: Deleted,
  ): Promise<void> {
    let size = FIRST_BATCH;
    while (!this.stopped) {
      await this.deps.settled?.();
      const t0 = performance.now();
      const { deleted, more } = await del(size);
      const ms = performance.now() - t0;
      report.batches += 1;
      report.longestBatchMs = Math.max(report.longestBatchMs, ms);
      this.deps.metrics.retentionBatch(ms / 1000);
      for (const kind of DELETED_KINDS) {
        if (deleted[kind] > 0) {
          report.deleted[kind] += deleted[kind];
          ofOrg[kind] += deleted[kind];
          this.deps.metrics.retentionDeleted(kind, deleted[kind]);
        }
      }
      if (!more) return;
      const scaled = Math.round(size * (TARGET_BATCH_MS / Math.max(ms, 0.1)));
      size = Math.min(MAX_BATCH, Math.max(MIN_BATCH, Math.min(scaled, size * 2)));
      await sleep(Math.max(1, Math.round(ms * REST_FACTOR)));
    }
  }
}

import type { CronOccurrenceRepository, SkipReason, SkippedOccurrence } from '../model/cron-occurrences.js';
import type { CronMissedPolicy, Trigger, TriggerRepository } from '../model/triggers.js';
import { isoAt, type Clock } from '../../util/clock.js';
import { DamagedColumnError } from '../../util/json.js';
import type { OccurrenceRunOutcome, RunOccurrenceInput } from '../trigger-run/run-trigger.js';
import { DueHeap } from './due-heap.js';
import { CronSchedules, type CronSchedule } from './schedule.js';
import { canonicalTimeZone } from './triggers-cron.js';

/**
 * Fires every enabled cron trigger at each occurrence of its schedule (docs/schedules.md).
 *
 * - An index in memory: each enabled cron trigger with the next instant it is due, in a min-heap,
 *   and ONE timer for the earliest. Nothing polls the triggers table: the index is read from the
 *   database at start and each trigger is re-read when the trigger service says it changed.
 * - Each occurrence is fired through the one way in for runs (`runOccurrence`), which claims it
 *   in the transaction that stores its job: a restart, a slow tick or a second scheduler on the
 *   same database never fires it twice. Every due trigger of a tick is fired in the same turn of
 *   the event loop, so their claims and jobs share group commits.
 * - Occurrences that passed without being fired (the coordinator was down, or the trigger
 *   disabled) are accounted for by the missed policy: recorded as skipped, except that
 *   `run_once` fires the newest of them when it is at most CATCH_UP_WINDOW_MS old. An occurrence
 *   handled within ON_TIME_MS of its instant is not missed (a restart of a few seconds).
 */

/** An occurrence fired within this long after its instant is on time, whatever the missed policy. */
export const ON_TIME_MS = 60_000;
/** `run_once` fires the newest missed occurrence only when it is at most this old. */
export const CATCH_UP_WINDOW_MS = 3_600_000;
/** The pause before an occurrence whose firing failed is tried again, doubled at each failure in a row, up to RETRY_MAX_MS. */
export const RETRY_FIRST_MS = 1_000;
export const RETRY_MAX_MS = 15_000;
/** Missed occurrences get a record each up to this many; older ones share one record (a range). */
export const MAX_MISSED_RECORDS = 100;
/**
 * Occurrences fired together: their claims and jobs share a group commit. Measured with 10,000
 * due at once (docs/performance.md): one commit for all ended 1.05 s after the minute, while
 * commits of 500 ended 2.8 to 3.5 s after it for the same CPU time (why is not yet known).
 */
export const FIRE_BATCH = 10_000;
/** The timer never sleeps longer than this, so a wall-clock jump is noticed within a minute. */
export const MAX_SLEEP_MS = 60_000;
/**
 * A wall clock found this far behind the previous tick's went back (an NTP step after a boot with
 * a wrong clock, a clock set by hand): the index is based on the new time (`clockWentBack`).
 */
export const CLOCK_BACK_MS = 60_000;
/** The heap is rebuilt from the live entries once it holds this many items more than twice their number. */
export const HEAP_SLACK = 64;

/** Where the scheduler's timer comes from (tests drive it by hand). */
export interface Timers {
  set(fn: () => void, ms: number): unknown;
  clear(handle: unknown): void;
}

export const realTimers: Timers = {
  set(fn, ms) {
    const timer = setTimeout(fn, ms);
    timer.unref();
    return timer;
  },
  clear(handle) {
    clearTimeout(handle as NodeJS.Timeout);
  },
};

export interface CronSchedulerDeps {
  triggers: Pick<TriggerRepository, 'listEnabledCron' | 'findById'>;
  occurrences: Pick<CronOccurrenceRepository, 'recordSkipped' | 'latestScheduledAt'>;
  runs: { runOccurrence(input: RunOccurrenceInput): Promise<OccurrenceRunOutcome> };
  clock: Clock;
  timers?: Timers;
  logger: {
    info(obj: object, msg: string): void;
    warn(obj: object, msg: string): void;
    error(obj: object, msg: string): void;
  };
}

/** One enabled cron trigger in the index. */
interface Entry {
  triggerId: string;
  orgId: string;
  expression: string;
  zone: string;
  missedPolicy: CronMissedPolicy;
  schedule: CronSchedule;
  /** Every occurrence at or before this instant has been handled (or was not owed). */
  handledUntil: number;
  /** The first occurrence after `handledUntil`: when the entry is due. */
  dueAt: number;
  /**
   * Occurrences found late at or before this instant passed while the trigger was disabled (it was
   * enabled again then) and are recorded `disabled`; later ones are `missed` (a coordinator down,
   * a tick late: a trigger just created whose first occurrence is handled late is not one disabled).
   */
  disabledUntil: number;
  /** Firings that failed in a row (retryLater's pause grows with them). */
  failures: number;
}

/** What one tick does for one trigger. */
interface Plan {
  entry: Entry;
  fire: number | null;
  skipped: SkippedOccurrence[];
}

export class CronScheduler {
  private readonly entries = new Map<string, Entry>();
  private heap = new DueHeap<Entry>();
  private readonly schedules = new CronSchedules();
  private readonly timers: Timers;
  private timer: unknown = undefined;
  private timerAt = Number.POSITIVE_INFINITY;
  /** Every operation (load, tick, change) runs after the previous one: one at a time. */
  private queue: Promise<void> = Promise.resolve();
  private stopped = false;
  /** The clock at the last tick, to notice it going back. */
  private lastTickAt = Number.NEGATIVE_INFINITY;

  constructor(private readonly deps: CronSchedulerDeps) {
    this.timers = deps.timers ?? realTimers;
  }

  /** Reads every enabled cron trigger and arms the timer; missed occurrences are handled at once. */
  start(): Promise<void> {
    return this.enqueue(async () => {
      for (const trigger of await this.listEnabledCron()) await this.load(trigger, 'missed');
      await this.tick();
    });
  }

  /**
   * The trigger was created, changed or deleted: its schedule takes effect at once (an enabled
   * trigger whose occurrences passed while it was disabled has them handled now).
   */
  triggerChanged(triggerId: string): Promise<void> {
    return this.enqueue(async () => {
      let trigger: Trigger | null;
      try {
        trigger = await this.deps.triggers.findById(triggerId);
      } catch (error) {
        if (!(error instanceof DamagedColumnError)) throw error;
        this.leaveOut(triggerId, error.column, error, 'row');
        this.arm();
        return;
      }
      const applied = await this.apply(triggerId, trigger);
      if (applied === 'loaded') await this.tick();
      else if (applied === 'removed') this.arm();
    });
  }

  /**
   * Reads every enabled cron trigger again, as if each had changed (changes made by another
   * coordinator may have been missed: domain/cron/trigger-changes.ts).
   */
  reload(): Promise<void> {
    return this.enqueue(async () => {
      const triggers = await this.listEnabledCron();
      const listed = new Set(triggers.map((t) => t.id));
      for (const triggerId of [...this.entries.keys()]) if (!listed.has(triggerId)) this.entries.delete(triggerId);
      let loaded = false;
      for (const trigger of triggers) if ((await this.apply(trigger.id, trigger)) === 'loaded') loaded = true;
      if (loaded) await this.tick();
      else this.arm();
    });
  }

  /**
   * The enabled cron triggers; one whose row does not parse (a damaged or hand-edited database)
   * is left out with an error naming it and the column, rather than leaving out all of them.
   */
  private async listEnabledCron(): Promise<Trigger[]> {
    const { triggers, damaged } = await this.deps.triggers.listEnabledCron();
    for (const { id, column, error } of damaged) this.leaveOut(id, column, error, 'row');
    return triggers;
  }

  /** Takes a trigger whose stored schedule (or row) does not parse out of the index, with an error naming it and the field. */
  private leaveOut(triggerId: string, field: string, error: unknown, what: 'schedule' | 'row'): void {
    this.entries.delete(triggerId);
    this.deps.logger.error(
      { ...(error === undefined ? {} : { err: error }), triggerId, field },
      `cron trigger: its stored ${what} does not parse; not scheduled`,
    );
  }

  /** Brings the trigger's entry in line with the trigger as read. */
  private async apply(triggerId: string, trigger: Trigger | null): Promise<'loaded' | 'removed' | 'kept'> {
    const current = this.entries.get(triggerId);
    if (!trigger || !isScheduled(trigger)) {
      if (current) this.entries.delete(triggerId);
      return 'removed';
    }
    if (current && sameSchedule(current, trigger)) {
      current.missedPolicy = trigger.cronMissedPolicy ?? 'skip';
      return 'kept';
    }
    await this.load(trigger, current ? 'missed' : 'disabled');
    return 'loaded';
  }

  /** Resolves once every operation asked for so far has finished (tests). */
  idle(): Promise<void> {
    return this.queue;
  }

  /** The next instant the trigger is due, in this scheduler's index, or null when it is not scheduled. */
  nextDue(triggerId: string): number | null {
    return this.entries.get(triggerId)?.dueAt ?? null;
  }

  /** The items of the index's heap, stale ones included (tests). */
  heapSize(): number {
    return this.heap.size;
  }

  /** Stops the timer and waits for the operation in progress. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.disarm();
    await this.queue;
  }

  private enqueue(op: () => Promise<void>): Promise<void> {
    const run = this.queue.then(async () => {
      if (this.stopped) return;
      try {
        await op();
      } catch (error) {
        this.deps.logger.error({ err: error }, 'cron scheduler: operation failed');
      }
    });
    this.queue = run;
    return run;
  }

  /**
   * Puts an enabled cron trigger in the index, due at its first occurrence not yet handled. A
   * trigger whose stored schedule or instants do not parse (only a damaged or hand-edited
   * database holds one: the API refuses them) is left out with an error naming it and the field,
   * rather than stopping the loading of the triggers after it.
   */
  private async load(trigger: Trigger, lateReason: SkipReason): Promise<void> {
    const expression = trigger.cronExpression as string;
    const zone = trigger.cronTimezone as string;
    const unscheduled = (field: string, error?: unknown) => this.leaveOut(trigger.id, field, error, 'schedule');
    if (canonicalTimeZone(zone) === null) return unscheduled('cronTimezone');
    let schedule: CronSchedule;
    try {
      schedule = this.schedules.get(expression, zone);
      schedule.next(this.deps.clock.now());
    } catch (error) {
      return unscheduled('cronExpression', error);
    }
    const latest = await this.deps.occurrences.latestScheduledAt(trigger.id);
    const since = Date.parse(trigger.cronSince ?? trigger.updatedAt);
    if (Number.isNaN(since)) return unscheduled(trigger.cronSince === null ? 'updatedAt' : 'cronSince');
    const latestAt = latest === null ? Number.NEGATIVE_INFINITY : Date.parse(latest);
    if (Number.isNaN(latestAt)) return unscheduled('lastOccurrences.scheduledAt');
    // Later than now only when the clock went back since (or another coordinator's runs ahead):
    // what is owed starts now, not at an instant the clock may take days to reach again.
    const handledUntil = Math.min(Math.max(since, latestAt), this.deps.clock.now());
    const dueAt = schedule.next(handledUntil);
    if (dueAt === null) {
      this.entries.delete(trigger.id);
      return;
    }
    const entry: Entry = {
      triggerId: trigger.id,
      orgId: trigger.orgId,
      expression,
      zone,
      missedPolicy: trigger.cronMissedPolicy ?? 'skip',
      schedule,
      handledUntil,
      dueAt,
      disabledUntil: lateReason === 'disabled' ? this.deps.clock.now() : Number.NEGATIVE_INFINITY,
      failures: 0,
    };
    this.entries.set(trigger.id, entry);
    this.heap.push(dueAt, entry);
    // The item of the entry this one replaces stays in the heap, stale, until its instant comes
    // (a yearly schedule: a year); a trigger changed or paused and resumed again and again would
    // grow the heap without bound. Past twice the live entries, it is rebuilt of them alone.
    if (this.heap.size > 2 * this.entries.size + HEAP_SLACK) {
      const heap = new DueHeap<Entry>();
      for (const live of this.entries.values()) heap.push(live.dueAt, live);
      this.heap = heap;
    }
  }

  /** Fires every trigger due now, then arms the timer for the next. */
  private async tick(): Promise<void> {
    this.disarm();
    const now = this.deps.clock.now();
    if (now < this.lastTickAt - CLOCK_BACK_MS) this.clockWentBack(this.lastTickAt, now);
    this.lastTickAt = now;
    const plans: Plan[] = [];
    for (;;) {
      const top = this.heap.peek();
      if (!top || top.at > now) break;
      this.heap.pop();
      const entry = top.item;
      // A stale heap item: the trigger was changed, removed, or is due at another instant.
      if (this.entries.get(entry.triggerId) !== entry || entry.dueAt !== top.at) continue;
      plans.push(this.plan(entry, now));
    }
    if (plans.length > 0) await this.carryOut(plans);
    this.arm();
  }

  /**
   * The wall clock went back from `before` to `now`: every entry handled past `now` is due again
   * from `now`, where it would wait for the clock to reach its next occurrence after `before` (a
   * clock a day fast until NTP corrected it: no cron job for a day). An occurrence fired already
   * is not fired again as the clock passes it anew: its claim stands (`claimed_before`).
   */
  private clockWentBack(before: number, now: number): void {
    this.deps.logger.warn(
      { from: isoAt(before), to: isoAt(now) },
      'the clock went back: cron triggers are due from the new time; an occurrence already fired does not fire again',
    );
    for (const entry of [...this.entries.values()]) {
      if (entry.handledUntil <= now) continue;
      entry.handledUntil = now;
      const next = entry.schedule.next(now);
      if (next === null) {
        this.entries.delete(entry.triggerId);
        continue;
      }
      entry.dueAt = next;
      this.heap.push(next, entry);
    }
  }

  /** Which occurrence of a due entry to fire now, which to record as skipped; moves the entry on. */
  private plan(entry: Entry, now: number): Plan {
    const { schedule } = entry;
    const after = schedule.next(entry.dueAt);
    // Usually one occurrence is due; more when the coordinator was down or the trigger disabled.
    const due =
      after === null || after > now
        ? [entry.dueAt]
        : schedule.latestOnes(now, entry.handledUntil, MAX_MISSED_RECORDS + 1);
    const newest = due[0] as number;
    const age = now - newest;
    const fire = age <= ON_TIME_MS || (entry.missedPolicy === 'run_once' && age <= CATCH_UP_WINDOW_MS) ? newest : null;
    // Each of the newest MAX_MISSED_RECORDS gets a record; the older ones share one (below).
    const skippedAt = due.slice(fire === null ? 0 : 1, MAX_MISSED_RECORDS);
    const recordedAt = isoAt(now);
    const reasonAt = (at: number): SkipReason => (at <= entry.disabledUntil ? 'disabled' : 'missed');
    const skipped: SkippedOccurrence[] = skippedAt.map((at) => ({
      triggerId: entry.triggerId,
      orgId: entry.orgId,
      scheduledAt: isoAt(at),
      reason: reasonAt(at),
      firstScheduledAt: null,
      recordedAt,
    }));
    if (due.length > MAX_MISSED_RECORDS) {
      // More were missed than get a record each: the oldest share one, from the first owed on.
      const rangeEnd = due[MAX_MISSED_RECORDS] as number;
      const rangeStart = schedule.next(entry.handledUntil) ?? rangeEnd;
      skipped.push({
        triggerId: entry.triggerId,
        orgId: entry.orgId,
        scheduledAt: isoAt(rangeEnd),
        reason: reasonAt(rangeEnd),
        firstScheduledAt: rangeStart < rangeEnd ? isoAt(rangeStart) : null,
        recordedAt,
      });
    }
    entry.handledUntil = Math.max(newest, entry.handledUntil);
    entry.disabledUntil = Number.NEGATIVE_INFINITY;
    const next = schedule.next(Math.max(now, newest));
    if (next === null) {
      this.entries.delete(entry.triggerId);
    } else {
      entry.dueAt = next;
      this.heap.push(next, entry);
    }
    return { entry, fire, skipped };
  }

  /** Records the skipped occurrences and fires the others, FIRE_BATCH to a group commit. */
  private async carryOut(plans: readonly Plan[]): Promise<void> {
    const { occurrences, logger } = this.deps;
    const skipped = plans.flatMap((p) => p.skipped);
    const recording = occurrences.recordSkipped(skipped).catch((error: unknown) => {
      logger.error({ err: error }, 'could not record skipped occurrences');
    });
    const firing = plans.filter((p) => p.fire !== null);
    let created = 0;
    let notDue = 0;
    for (let i = 0; i < firing.length; i += FIRE_BATCH) {
      const counts = await this.fire(firing.slice(i, i + FIRE_BATCH));
      created += counts.created;
      notDue += counts.notDue;
    }
    await recording;
    logger.info({ due: plans.length, jobs: created, skipped: skipped.length, notDue }, 'cron occurrences handled');
  }

  private async fire(batch: readonly Plan[]): Promise<{ created: number; notDue: number }> {
    const { runs, logger } = this.deps;
    const results = await Promise.allSettled(
      batch.map(({ entry, fire }) =>
        runs.runOccurrence({
          orgId: entry.orgId,
          triggerId: entry.triggerId,
          scheduledAt: isoAt(fire as number),
          stillDue: (trigger) => isScheduled(trigger) && sameSchedule(entry, trigger),
        }),
      ),
    );
    let created = 0;
    let notDue = 0;
    results.forEach((result, i) => {
      const { entry, fire } = batch[i] as Plan;
      if (result.status === 'rejected') {
        const retryInMs = this.retryLater(entry, fire as number);
        logger.error(
          { err: result.reason, triggerId: entry.triggerId, scheduledAt: isoAt(fire as number), retryInMs },
          'cron occurrence could not be fired; trying again',
        );
        return;
      }
      entry.failures = 0;
      if (result.value.outcome === 'job_created' || result.value.outcome === 'batch_created') created++;
      if (result.value.outcome === 'job_created' && result.value.rejection !== undefined) {
        // Every occurrence fails the same way until someone changes the trigger or the workflow.
        logger.warn(
          { triggerId: entry.triggerId, scheduledAt: isoAt(fire as number), jobId: result.value.jobId },
          `cron trigger: the scheduled job was rejected: ${result.value.rejection}`,
        );
      }
      if (result.value.outcome === 'not_due') {
        // Changed by someone this process did not hear from: read it again.
        notDue++;
        void this.triggerChanged(entry.triggerId);
      }
    });
    return { created, notDue };
  }

  /**
   * An occurrence whose firing failed (the database could not be written, say) is due again after
   * a pause (RETRY_FIRST_MS, doubling up to RETRY_MAX_MS): the entry goes back to before it, and
   * the tick then plans it as any occurrence found late, fired while on time (or within the
   * catch-up window of `run_once`), recorded `missed` after. Its claim keeps it from running
   * twice. Nothing is done for an entry changed or removed meanwhile. Gives the pause.
   */
  private retryLater(entry: Entry, at: number): number {
    entry.failures += 1;
    const pauseMs = Math.min(RETRY_MAX_MS, RETRY_FIRST_MS * 2 ** (entry.failures - 1));
    this.timers.set(() => {
      if (this.stopped || this.entries.get(entry.triggerId) !== entry || entry.handledUntil < at) return;
      entry.handledUntil = at - 1;
      entry.dueAt = at;
      this.heap.push(at, entry);
      void this.enqueue(() => this.tick());
    }, pauseMs);
    return pauseMs;
  }

  private arm(): void {
    if (this.stopped) return;
    let top = this.heap.peek();
    // Drop stale items at the top so that the timer is for a live entry.
    while (top && (this.entries.get(top.item.triggerId) !== top.item || top.item.dueAt !== top.at)) {
      this.heap.pop();
      top = this.heap.peek();
    }
    if (!top) {
      this.disarm();
      return;
    }
    const now = this.deps.clock.now();
    const wakeAt = Math.min(top.at, now + MAX_SLEEP_MS);
    if (this.timer !== undefined && this.timerAt === wakeAt) return;
    this.disarm();
    this.timerAt = wakeAt;
    this.timer = this.timers.set(
      () => {
        this.timer = undefined;
        this.timerAt = Number.POSITIVE_INFINITY;
        void this.enqueue(() => this.tick());
      },
      Math.max(0, wakeAt - now),
    );
  }

  private disarm(): void {
    if (this.timer !== undefined) this.timers.clear(this.timer);
    this.timer = undefined;
    this.timerAt = Number.POSITIVE_INFINITY;
  }
}

/** An enabled cron trigger with a schedule. */
function isScheduled(trigger: Trigger): boolean {
  return (
    trigger.type === 'cron' &&
    trigger.cronEnabled === true &&
    trigger.cronExpression !== null &&
    trigger.cronTimezone !== null
  );
}

function sameSchedule(entry: Pick<Entry, 'expression' | 'zone'>, trigger: Trigger): boolean {
  return entry.expression === trigger.cronExpression && entry.zone === trigger.cronTimezone;
}

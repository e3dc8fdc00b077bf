import type { CronOccurrence, CronOccurrenceRepository } from '../model/cron-occurrences.js';
import type { Trigger } from '../model/triggers.js';
import { isoAt } from '../../util/clock.js';
import { localIso, type CronSchedules } from './schedule.js';

/** A trigger as the management API shows it: its configuration and, for cron triggers, its schedule. */
export type TriggerView = Omit<Trigger, 'cronSince'> & ScheduleView;

/** An occurrence as the management API shows it. */
export type OccurrenceView = Omit<CronOccurrence, 'triggerId'>;

export interface ScheduleView {
  /** The next occurrence (UTC), or null: not a cron trigger, disabled, never again, or a stored schedule that does not parse. */
  nextRunAt: string | null;
  /** The next few occurrences, in UTC and as the local time of the trigger's zone. */
  nextRuns: { at: string; localTime: string }[];
  /** The newest records of the trigger's occurrences, newest first. */
  lastOccurrences: OccurrenceView[];
}

export const NEXT_RUNS_SHOWN = 5;
export const LAST_OCCURRENCES_SHOWN = 5;

export const occurrenceView = ({ triggerId: _, ...occurrence }: CronOccurrence): OccurrenceView => occurrence;

/** The trigger with its next occurrences after `now` and its last records. */
export async function triggerView(
  trigger: Trigger,
  now: number,
  schedules: CronSchedules,
  occurrences: Pick<CronOccurrenceRepository, 'list'>,
): Promise<TriggerView> {
  const { cronSince: _, ...config } = trigger;
  if (trigger.type !== 'cron' || trigger.cronExpression === null || trigger.cronTimezone === null) {
    return { ...config, nextRunAt: null, nextRuns: [], lastOccurrences: [] };
  }
  const zone = trigger.cronTimezone;
  const next =
    trigger.cronEnabled === true ? schedules.upcoming(trigger.cronExpression, zone, now, NEXT_RUNS_SHOWN) : [];
  const last = await occurrences.list(trigger.id, { limit: LAST_OCCURRENCES_SHOWN });
  return {
    ...config,
    nextRunAt: next.length > 0 ? isoAt(next[0] as number) : null,
    nextRuns: next.map((at) => ({ at: isoAt(at), localTime: localIso(at, zone) })),
    lastOccurrences: last.map(occurrenceView),
  };
}

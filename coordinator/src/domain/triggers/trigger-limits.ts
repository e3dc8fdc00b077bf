import type { Trigger, TriggerLimit, TriggerLimits } from '../model/triggers.js';
import { AppError } from '../../errors.js';

/**
 * How many triggers an organization may have (docs/management.md, "Limits"): the server's
 * operator sets both (`DROVER_MAX_TRIGGERS_PER_ORG`, `DROVER_MAX_CRON_TRIGGERS_PER_ORG`). Deleted
 * triggers do not count, nor do disabled cron triggers toward the cron limit (the scheduler
 * loads enabled ones only).
 */

/** The limits and the settings that make them. */
export const TRIGGER_LIMIT_SETTINGS: Record<TriggerLimit, string> = {
  triggers: 'DROVER_MAX_TRIGGERS_PER_ORG',
  enabledCron: 'DROVER_MAX_CRON_TRIGGERS_PER_ORG',
};

const enabledCron = (t: Pick<Trigger, 'type' | 'cronEnabled'>): boolean => t.type === 'cron' && t.cronEnabled === true;

/**
 * Which limit writing `after` over `before` (null: a new trigger) would pass, given `others`, the
 * organization's counts without this trigger; null when it fits. Only what a write adds is
 * checked: a new trigger, and a cron trigger that becomes enabled (created enabled, enabled
 * again, or made cron). So an organization above a limit the operator lowered can still change,
 * disable and delete its triggers.
 */
export function triggerLimitRefusal(
  before: Pick<Trigger, 'type' | 'cronEnabled'> | null,
  after: Pick<Trigger, 'type' | 'cronEnabled'>,
  others: TriggerLimits,
  limits: TriggerLimits,
): TriggerLimit | null {
  if (before === null && others.triggers >= limits.triggers) return 'triggers';
  if (enabledCron(after) && !(before !== null && enabledCron(before)) && others.enabledCron >= limits.enabledCron) {
    return 'enabledCron';
  }
  return null;
}

const WORDS: Record<TriggerLimit, { one: string; many: string; code: string; fix: string }> = {
  triggers: { one: 'trigger', many: 'triggers', code: 'triggers', fix: 'delete one' },
  enabledCron: {
    one: 'enabled cron trigger',
    many: 'enabled cron triggers',
    code: 'enabled_cron_triggers',
    fix: 'disable or delete one',
  },
};

/** The 409 for a write that would pass `limit`: it names the limit, its value and its setting. */
export function triggerLimitReached(limit: TriggerLimit, limits: TriggerLimits): AppError {
  const { one, many, code, fix } = WORDS[limit];
  const setting = TRIGGER_LIMIT_SETTINGS[limit];
  const max = limits[limit];
  const what = max === 1 ? one : many;
  const message =
    max === 0
      ? `This server allows no ${one} (${setting}=0); ask the server's operator to raise ${setting}`
      : `This organization has ${max} ${what}, the most this server allows (${setting}=${max}): ${fix} first, or ask the server's operator to raise ${setting}`;
  return new AppError('limit_reached', message, { details: { limit: code, max, setting } });
}

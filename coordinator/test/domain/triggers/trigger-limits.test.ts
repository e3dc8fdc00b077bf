import { describe, expect, it } from 'vitest';
import { AppError } from '../../../src/errors.js';
import { triggerLimitReached, triggerLimitRefusal } from '../../../src/domain/triggers/trigger-limits.js';

const limits = { triggers: 10, enabledCron: 2 };
const webhook = { type: 'webhook' as const, cronEnabled: null };
const cron = (cronEnabled: boolean) => ({ type: 'cron' as const, cronEnabled });

describe('trigger limits', () => {
  it('refuses a new trigger when the organization has as many as the limit', () => {
    expect(triggerLimitRefusal(null, webhook, { triggers: 9, enabledCron: 0 }, limits)).toBeNull();
    expect(triggerLimitRefusal(null, webhook, { triggers: 10, enabledCron: 0 }, limits)).toBe('triggers');
  });

  it('counts enabled cron triggers only toward the cron limit', () => {
    const full = { triggers: 3, enabledCron: 2 };
    expect(triggerLimitRefusal(null, cron(true), full, limits)).toBe('enabledCron');
    expect(triggerLimitRefusal(null, cron(false), full, limits)).toBeNull();
    expect(triggerLimitRefusal(null, webhook, full, limits)).toBeNull();
  });

  it('checks a change only for what it adds: a cron trigger that becomes enabled', () => {
    const full = { triggers: 10, enabledCron: 2 };
    expect(triggerLimitRefusal(cron(false), cron(true), full, limits)).toBe('enabledCron');
    expect(triggerLimitRefusal(webhook, cron(true), full, limits)).toBe('enabledCron');
    // Already enabled, disabled, or of another kind: nothing added, even past a lowered limit.
    const past = { triggers: 50, enabledCron: 9 };
    expect(triggerLimitRefusal(cron(true), cron(true), past, limits)).toBeNull();
    expect(triggerLimitRefusal(cron(true), cron(false), past, limits)).toBeNull();
    expect(triggerLimitRefusal(webhook, webhook, past, limits)).toBeNull();
  });

  it('answers 409 limit_reached naming the limit, its value and its setting', () => {
    const error = triggerLimitReached('enabledCron', limits);
    expect(error).toBeInstanceOf(AppError);
    expect(error.toBody()).toEqual({
      statusCode: 409,
      code: 'limit_reached',
      message:
        "This organization has 2 enabled cron triggers, the most this server allows (DROVER_MAX_CRON_TRIGGERS_PER_ORG=2): disable or delete one first, or ask the server's operator to raise DROVER_MAX_CRON_TRIGGERS_PER_ORG",
      details: { limit: 'enabled_cron_triggers', max: 2, setting: 'DROVER_MAX_CRON_TRIGGERS_PER_ORG' },
    });
    expect(triggerLimitReached('triggers', limits).message).toContain(
      'This organization has 10 triggers, the most this server allows (DROVER_MAX_TRIGGERS_PER_ORG=10): delete one first',
    );
    expect(triggerLimitReached('enabledCron', { triggers: 10, enabledCron: 0 }).message).toBe(
      "This server allows no enabled cron trigger (DROVER_MAX_CRON_TRIGGERS_PER_ORG=0); ask the server's operator to raise DROVER_MAX_CRON_TRIGGERS_PER_ORG",
    );
  });
});

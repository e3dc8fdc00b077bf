import { describe, expect, it } from 'vitest';
import { canonicalTimeZone, checkCronExpression } from '../../../src/domain/cron/triggers-cron.js';

describe('cron expressions of triggers', () => {
  it('accepts standard 5-field expressions with steps, ranges, lists and names', () => {
    for (const e of ['*/5 * * * *', '0 9 * * MON-FRI', '15,45 0-6 1 JAN,JUL *', '0 0 29 2 *']) {
      expect(checkCronExpression(e)).toEqual({ ok: true, expression: e });
    }
  });

  it('normalizes the spacing between fields', () => {
    expect(checkCronExpression('  0   9 * *\t1 ')).toEqual({ ok: true, expression: '0 9 * * 1' });
  });

  it('refuses nicknames, seconds and year fields, and too few fields', () => {
    for (const e of ['@daily', '* * * * * *', '0 0 1 1 * 2030', '* * * *', '', '   ']) {
      const check = checkCronExpression(e);
      expect(check.ok).toBe(false);
      if (!check.ok) expect(check.reason).toMatch(/5-field/);
    }
  });

  it('refuses out-of-range values and garbage with the parser reason', () => {
    for (const e of ['61 * * * *', '* 24 * * *', '* * 32 * *', '* * * 13 *', 'a b c d e', '5/5 * * * *']) {
      const check = checkCronExpression(e);
      expect(check.ok, e).toBe(false);
      if (!check.ok) expect(check.reason).toMatch(/not a valid cron expression/);
    }
  });

  it('names the field and its range when a number is out of it, counting as the expression does', () => {
    expect(checkCronExpression('0 0 * 13 *')).toEqual({
      ok: false,
      reason: 'is not a valid cron expression: the month field takes 1 to 12, got 13',
    });
    expect(checkCronExpression('0 0 0 * *')).toEqual({
      ok: false,
      reason: 'is not a valid cron expression: the day-of-month field takes 1 to 31, got 0',
    });
    expect(checkCronExpression('0 0 * 0 *')).toMatchObject({
      reason: expect.stringContaining('month field takes 1 to 12, got 0'),
    });
    expect(checkCronExpression('0 0 * * 1-8')).toMatchObject({
      reason: expect.stringContaining('day-of-week field takes 0 to 7, got 8'),
    });
    expect(checkCronExpression('*/0 * * * *')).toMatchObject({
      reason: expect.stringContaining("minute field's step must be at least 1"),
    });
    expect(checkCronExpression('0 0 * * 7')).toEqual({ ok: true, expression: '0 0 * * 7' });
  });

  it('refuses an expression that can never fire', () => {
    const check = checkCronExpression('0 0 31 2 *');
    expect(check).toEqual({ ok: false, reason: expect.stringMatching(/never fires/) });
  });
});

describe('trigger time zones', () => {
  it('gives the canonical name of a known IANA zone', () => {
    expect(canonicalTimeZone('UTC')).toBe('UTC');
    expect(canonicalTimeZone('utc')).toBe('UTC');
    expect(canonicalTimeZone('Europe/Paris')).toBe('Europe/Paris');
    expect(canonicalTimeZone('america/new_york')).toBe('America/New_York');
  });

  it("keeps the IANA database's current name where the runtime's canonical one is older", () => {
    expect(canonicalTimeZone('Europe/Kyiv')).toBe('Europe/Kyiv');
    expect(canonicalTimeZone('europe/kiev')).toBe('Europe/Kyiv');
    expect(canonicalTimeZone('Asia/Kolkata')).toBe('Asia/Kolkata');
    expect(canonicalTimeZone('America/Argentina/Buenos_Aires')).toBe('America/Argentina/Buenos_Aires');
    expect(canonicalTimeZone('US/Eastern')).toBe('America/New_York');
  });

  it('refuses unknown zones, bare offsets and absurd input', () => {
    for (const zone of ['Mars/Olympus', '+02:00', '-0500', '', 'x'.repeat(65), 'Europe/../Paris']) {
      expect(canonicalTimeZone(zone), zone).toBeNull();
    }
  });
});

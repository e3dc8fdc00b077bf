import { describe, expect, it } from 'vitest';
import { canonicalTimeZone, checkCronExpression } from '../../../src/domain/cron/triggers-cron.js';

describe('cron expressions of triggers', () => {
  it('accepts standard 5-field expressions with steps, ranges, lists and names', () => {
    for (const e of ['*/5 * * * *', '0 9 * * MON-FRI', '15,45 0-6 1 JAN,JUL *', '0 0 29 2 *']) {
      expect(checkCronExpression(e)).toEqual({ ok: true, expression: e });
    }
  });

  it("takes the parser's L, W and # (last, nearest weekday, nth weekday), not its + (day AND weekday)", () => {
    for (const e of ['0 9 L * *', '0 9 15W * *', '0 9 * * 5#2', '0 9 * * 5L', '0 9 ? * MON']) {
      expect(checkCronExpression(e)).toEqual({ ok: true, expression: e });
    }
    expect(checkCronExpression('0 9 1 * +MON')).toEqual({
      ok: false,
      reason: expect.stringMatching(/`\+` is not taken/),
    });
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
      reason: 'is not a valid cron expression: the month field takes 1 to 12 or JAN to DEC, got 13',
    });
    expect(checkCronExpression('0 0 0 * *')).toEqual({
      ok: false,
      reason: 'is not a valid cron expression: the day-of-month field takes 1 to 31, got 0',
    });
    expect(checkCronExpression('0 0 * 0 *')).toMatchObject({
      reason: expect.stringContaining('month field takes 1 to 12 or JAN to DEC, got 0'),
    });
    expect(checkCronExpression('0 0 * * 1-8')).toMatchObject({
      reason: expect.stringContaining('day-of-week field takes 0 to 7 or SUN to SAT, got 8'),
    });
    expect(checkCronExpression('*/0 * * * *')).toMatchObject({
      reason: expect.stringContaining("minute field's step must be at least 1"),
    });
    expect(checkCronExpression('0 0 * * 7')).toEqual({ ok: true, expression: '0 0 * * 7' });
  });

  it('names the field a month or day name was written in, and the field it belongs to', () => {
    // Weekdays in the month field: the parser said only `configuration entry 4 (MON-FRI) contains illegal characters`.
    expect(checkCronExpression('0 9 * MON-FRI *')).toEqual({
      ok: false,
      reason:
        'is not a valid cron expression: the month field takes 1 to 12 or JAN to DEC, got MON: a day-of-week name, and day-of-week is the fifth field',
    });
    expect(checkCronExpression('0 9 1 * JAN')).toEqual({
      ok: false,
      reason:
        'is not a valid cron expression: the day-of-week field takes 0 to 7 or SUN to SAT, got JAN: a month name, and month is the fourth field',
    });
    expect(checkCronExpression('0 JUL 1 * *')).toMatchObject({
      reason: expect.stringContaining('the hour field takes 0 to 23, got JUL: a month name, and month is the fourth'),
    });
    // A whole name: the parser said `a month or day name has to stand alone ('Monday')`.
    expect(checkCronExpression('0 9 * * Monday')).toEqual({
      ok: false,
      reason:
        'is not a valid cron expression: the day-of-week field takes 0 to 7 or SUN to SAT, got Monday (names are three letters)',
    });
    expect(checkCronExpression('NOON * * * *')).toMatchObject({
      reason: expect.stringContaining('the minute field takes 0 to 59, got NOON'),
    });
    // Names in their own fields, in any case, and the parser's own marks, are as before.
    for (const e of ['0 9 * * mon-Fri', '0 0 1 jan,JUL *', '0 0 L * *', '0 0 * * 5L', '0 0 * * MON#2']) {
      expect(checkCronExpression(e), e).toEqual({ ok: true, expression: e });
    }
  });

  it("says the parser's refusals in the expression's own terms: its fields by their names", () => {
    const reasons = {
      '0 0 W * *':
        'the day-of-month field does not take `W` (W follows a day of the month, as in 15W, the weekday nearest the 15th)',
      '0 0 * * L':
        'the day-of-week field does not take `L` (L stands alone in day-of-month, the last day; in day-of-week it follows a day, as in 5L, the last Friday)',
      'a 0 * * *': 'the minute field does not take `a`',
      '0 0 * * MON#6': "the day-of-week field's # takes 1 to 5 or L (the nth such day of the month), got 6",
      '0 0 * * 8L': 'the day-of-week field takes 0 to 7, got 8',
      '0 0 1W-3 * *': 'W is not allowed in a range.',
    };
    for (const [expression, reason] of Object.entries(reasons)) {
      expect(checkCronExpression(expression), expression).toEqual({
        ok: false,
        reason: `is not a valid cron expression: ${reason}`,
      });
    }
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

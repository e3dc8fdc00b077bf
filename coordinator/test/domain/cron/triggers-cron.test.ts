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

  it('refuses unknown zones, bare offsets and absurd input', () => {
    for (const zone of ['Mars/Olympus', '+02:00', '-0500', '', 'x'.repeat(65), 'Europe/../Paris']) {
      expect(canonicalTimeZone(zone), zone).toBeNull();
    }
  });
});

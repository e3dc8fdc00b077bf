import { describe, expect, it } from 'vitest';
import { parseMoment } from '../src/moment.js';

const NOW = Date.parse('2026-12-01T12:00:00.000Z');

describe('parseMoment (--since, --until)', () => {
  it('takes a time with a zone, without one (UTC), a date alone, or a duration ago', () => {
    expect(parseMoment('2026-11-30T08:00:00Z', '--since', NOW)).toBe('2026-11-30T08:00:00.000Z');
    expect(parseMoment('2026-11-30 08:00+01:00', '--since', NOW)).toBe('2026-11-30T07:00:00.000Z');
    expect(parseMoment('2026-11-30T08:00:00.250-0130', '--since', NOW)).toBe('2026-11-30T09:30:00.250Z');
    expect(parseMoment('2026-11-30T08:00', '--since', NOW)).toBe('2026-11-30T08:00:00.000Z');
    expect(parseMoment('2026-11-30', '--since', NOW)).toBe('2026-11-30T00:00:00.000Z');
    expect(parseMoment('24h', '--since', NOW)).toBe('2026-11-30T12:00:00.000Z');
    expect(parseMoment('1d1h', '--until', NOW)).toBe('2026-11-30T11:00:00.000Z');
  });

  it('refuses what is no time, naming the option', () => {
    expect(() => parseMoment('2026-02-30', '--since', NOW)).toThrow('--since: no such time: `2026-02-30`');
    expect(() => parseMoment('2026-11-30T25:00Z', '--until', NOW)).toThrow('--until: no such time');
    expect(() => parseMoment('2026-11-30T08', '--since', NOW)).toThrow(
      '--since: expected a time such as 2026-11-30T08:00:00Z, got `2026-11-30T08`',
    );
    expect(() => parseMoment('yesterday', '--since', NOW)).toThrow(
      '--since: expected a time (2026-11-30T08:00:00Z, 2026-11-30) or a duration ago (30m, 24h, 7d), got `yesterday`',
    );
    expect(() => parseMoment('0h', '--since', NOW)).toThrow('--since: expected a time');
  });
});

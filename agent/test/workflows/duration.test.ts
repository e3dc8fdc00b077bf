import { describe, expect, it } from 'vitest';
import { formatDuration, parseDuration } from '../../src/workflows/duration.js';

describe('parseDuration', () => {
  it.each([
    ['500ms', 500],
    ['30s', 30_000],
    ['5m', 300_000],
    ['2h', 7_200_000],
    ['1h30m', 5_400_000],
    ['1.5s', 1500],
    [' 45s ', 45_000],
    ['90', 90_000],
    [90, 90_000],
    [0.25, 250],
    ['24h', 86_400_000],
  ])('reads %j as %i ms', (input, ms) => {
    expect(parseDuration(input)).toEqual({ ms });
  });

  it.each([['soon'], ['5 minutes'], ['-1s'], ['1d'], ['s'], [''], ['1h 30m']])(
    'refuses %j and says what it expected',
    (input) => {
      expect(parseDuration(input)).toEqual({
        problem: `expected a duration like 30s, 5m or a number of seconds, got \`${input}\``,
      });
    },
  );

  it('refuses zero, more than 24 hours, and values that are not scalars', () => {
    expect(parseDuration('0s')).toEqual({ problem: 'must be at least 1ms, got `0s`' });
    expect(parseDuration(0)).toEqual({ problem: 'must be at least 1ms, got `0`' });
    expect(parseDuration('25h')).toEqual({ problem: 'must be at most 24h, got `25h`' });
    expect(parseDuration(true)).toEqual({
      problem: 'expected a duration like 30s, 5m or a number of seconds, got `true` (boolean)',
    });
    expect(parseDuration(null)).toMatchObject({ problem: expect.stringContaining('got nothing') });
  });
});

describe('formatDuration', () => {
  it('writes durations as a person would', () => {
    expect(formatDuration(250)).toBe('250ms');
    expect(formatDuration(1500)).toBe('1.5s');
    expect(formatDuration(30_000)).toBe('30s');
    expect(formatDuration(5_400_000)).toBe('1h30m');
  });
});

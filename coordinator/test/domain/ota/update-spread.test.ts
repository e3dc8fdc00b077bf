import { describe, expect, it } from 'vitest';
import { UpdateSpread } from '../../../src/domain/ota/update-spread.js';

describe('UpdateSpread', () => {
  it('spreads the jobs of an evaluation the fleet cannot start within a second, at their first send only', () => {
    const spread = new UpdateSpread({ startsPerSecond: 1_000, clock: { now: () => 0 } });
    expect(spread.of(1_000)).toBe(0); // a second's worth: at once
    expect(spread.of(1_001)).toBe(1_001);
    expect(spread.of(100_000)).toBe(100_000);

    spread.issued('a', spread.of(100_000));
    spread.issued('b', spread.of(1_000)); // not spread: nothing kept
    expect(spread.take('a')).toBe(100_000);
    expect(spread.take('a')).toBe(0); // a redelivery
    expect(spread.take('b')).toBe(0);
    expect(spread.take('unknown')).toBe(0);
  });

  it('keeps a spread a minute at most: a job another coordinator sends is forgotten', () => {
    let now = 0;
    const spread = new UpdateSpread({ startsPerSecond: 1_000, clock: { now: () => now } });
    spread.issued('sent late', 5_000);
    spread.issued('kept', 5_000);
    now = 59_999;
    expect(spread.take('kept')).toBe(5_000);
    now = 60_000;
    expect(spread.take('sent late')).toBe(0);
    spread.issued('old', 5_000);
    now = 130_000;
    spread.issued('new', 5_000); // drops the expired ones first
    expect(spread.take('old')).toBe(0);
    expect(spread.take('new')).toBe(5_000);
  });
});

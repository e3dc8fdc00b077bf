import { describe, expect, it } from 'vitest';
import { UpdateSpread } from '../../../src/domain/ota/update-spread.js';

describe('UpdateSpread', () => {
  it('spreads the events of an evaluation the fleet cannot start within a second, for a second after it ends', () => {
    let now = 0;
    const spread = new UpdateSpread({ startsPerSecond: 1_000, clock: { now: () => now } });
    expect(spread.startWithinMs()).toBe(0);

    const small = spread.begin(1_000); // a second's worth: at once
    expect(spread.startWithinMs()).toBe(0);
    small();

    const large = spread.begin(100_000);
    expect(spread.startWithinMs()).toBe(100_000);
    const overlapping = spread.begin(5_000); // the larger of the two under way
    expect(spread.startWithinMs()).toBe(100_000);
    large();
    now += 500;
    overlapping();
    // The events of the last chunks are built after their commit: the spread lasts one more second.
    expect(spread.startWithinMs()).toBe(100_000);
    now += 999;
    expect(spread.startWithinMs()).toBe(100_000);
    now += 2;
    expect(spread.startWithinMs()).toBe(0);
  });
});

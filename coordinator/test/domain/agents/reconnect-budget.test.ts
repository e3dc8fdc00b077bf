import { describe, expect, it } from 'vitest';
import { ReconnectBudget } from '../../../src/domain/agents/reconnect-budget.js';

function clock(start = 1_000_000) {
  let now = start;
  return { now: () => now, advance: (ms: number) => (now += ms) };
}

describe('the reconnect budget', () => {
  it("admits a second's worth at once, then sheds the rest into later seconds at the budget's pace", () => {
    const c = clock();
    const budget = new ReconnectBudget({ perSecond: 4, clock: c });
    expect(Array.from({ length: 4 }, () => budget.admit())).toEqual(Array(4).fill({ admitted: true }));
    // The next twelve: slots 250 ms apart from one second ahead, as whole seconds.
    const shed = Array.from({ length: 12 }, () => budget.admit());
    expect(shed.map((a) => (a.admitted ? 0 : a.retryAfterSeconds))).toEqual([1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4]);
    expect(budget.shed).toBe(12);
    // Refilled at 4 a second: half a second later, two more opens go through.
    c.advance(500);
    expect([budget.admit(), budget.admit(), budget.admit()].map((a) => a.admitted)).toEqual([true, true, false]);
  });

  it('tells the reports that the budget is spent without spending it, and forgets old slots', () => {
    const c = clock();
    const budget = new ReconnectBudget({ perSecond: 2, clock: c });
    expect(budget.exhausted()).toBeNull();
    budget.admit();
    budget.admit();
    expect(budget.exhausted()).toBe(1);
    expect(budget.exhausted()).toBe(1);
    c.advance(10_000);
    expect(budget.exhausted()).toBeNull();
    budget.admit();
    budget.admit();
    // The slots handed out long ago are past: the next one is a second ahead again.
    expect(budget.admit()).toEqual({ admitted: false, retryAfterSeconds: 1 });
  });

  it('caps Retry-After at a minute, and hints a spread that fits the whole fleet into the budget', () => {
    const budget = new ReconnectBudget({ perSecond: 1, clock: clock() });
    budget.admit();
    const waits = Array.from({ length: 100 }, () => budget.admit()).map((a) => (a.admitted ? 0 : a.retryAfterSeconds));
    expect(Math.max(...waits)).toBe(60);
    const fleet = new ReconnectBudget({ perSecond: 1_000, clock: clock() });
    expect(fleet.retryHintMs(10_000)).toBe(10_000);
    expect(fleet.retryHintMs(3)).toBe(1_000);
  });
});

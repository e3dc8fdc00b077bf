import { describe, expect, it } from 'vitest';
import { ReconnectBudget } from '../../../src/domain/agents/reconnect-budget.js';

function clock(start = 1_000_000) {
  let now = start;
  return { now: () => now, advance: (ms: number) => (now += ms) };
}

describe('the reconnect budget', () => {
  it("admits a tenth of a second's worth at once, then sheds the rest into later seconds at the budget's pace", () => {
    const c = clock();
    const budget = new ReconnectBudget({ perSecond: 40, clock: c });
    expect(Array.from({ length: 4 }, () => budget.admit())).toEqual(Array(4).fill({ admitted: true }));
    // The next ones: slots 25 ms apart from one second ahead, as whole seconds.
    const shed = Array.from({ length: 81 }, () => budget.admit()).map((a) => (a.admitted ? 0 : a.retryAfterSeconds));
    expect(shed.filter((s) => s === 1)).toHaveLength(1);
    expect(shed.filter((s) => s === 2)).toHaveLength(40);
    expect(shed.filter((s) => s === 3)).toHaveLength(40);
    expect(budget.shed).toBe(81);
    // Refilled at 40 a second, up to 4: 50 ms later two more opens go through, a second later four.
    c.advance(50);
    expect([budget.admit(), budget.admit(), budget.admit()].map((a) => a.admitted)).toEqual([true, true, false]);
    c.advance(1_000);
    expect(Array.from({ length: 5 }, () => budget.admit()).map((a) => a.admitted)).toEqual([
      true,
      true,
      true,
      true,
      false,
    ]);
  });

  it('tells the reports that the budget is spent without spending it, and forgets old slots', () => {
    const c = clock();
    const budget = new ReconnectBudget({ perSecond: 20, clock: c });
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

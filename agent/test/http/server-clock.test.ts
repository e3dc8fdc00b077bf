import { describe, expect, it } from 'vitest';
import { describeOffset, ServerClock, type ClockChange } from '../../src/http/server-clock.js';

const DAY = 86_400_000;

function setup(localStart = Date.parse('2026-11-24T10:00:00.000Z')) {
  const local = { t: localStart };
  const changes: ClockChange[] = [];
  const clock = new ServerClock(
    () => local.t,
    (c) => changes.push(c),
  );
  return { local, clock, changes };
}

describe('ServerClock', () => {
  it('keeps a local clock the answers agree with, reporting the first measurement once', () => {
    const { local, clock, changes } = setup();
    const serverNow = local.t + 300; // 300 ms ahead, within the Date header's second
    clock.observeDateHeader(new Date(serverNow).toUTCString(), local.t, local.t + 20);
    expect(clock.offsetMs).toBe(0);
    expect(clock.measured).toBe(true);
    expect(changes).toEqual([{ offsetMs: 0, previousMs: 0, first: true }]);
    clock.observeDateHeader(new Date(local.t + 900).toUTCString(), local.t, local.t + 20);
    expect(changes).toHaveLength(1);
  });

  it('corrects a clock a day behind from a Date header to within a second, and keeps it there', () => {
    const { local, clock, changes } = setup();
    const server = () => local.t + DAY;
    const sentAt = local.t;
    local.t += 40;
    clock.observeDateHeader(new Date(server()).toUTCString(), sentAt, local.t);
    expect(Math.abs(clock.now() - server())).toBeLessThan(1_000);
    expect(changes.at(-1)).toMatchObject({ first: true, previousMs: 0 });
    for (let i = 0; i < 50; i++) {
      const sent = local.t;
      local.t += 5 + (i % 7) * 130;
      clock.observeDateHeader(new Date(server()).toUTCString(), sent, local.t);
      expect(Math.abs(clock.now() - server())).toBeLessThan(1_000);
    }
    // Answers narrow the bounds: the estimate moves a few times at most, never back and forth.
    expect(changes.length).toBeLessThanOrEqual(4);
  });

  it('takes an exact server time to within the round trip, and follows a clock that jumps', () => {
    const { local, clock, changes } = setup();
    clock.observeServerTime(local.t - 6 * 60_000, local.t, local.t + 10);
    expect(Math.abs(clock.offsetMs + 6 * 60_000)).toBeLessThanOrEqual(10);
    // NTP fixes the local clock: it jumps six minutes back; the next answer shows it.
    local.t -= 6 * 60_000;
    clock.observeDateHeader(new Date(local.t).toUTCString(), local.t, local.t + 5);
    expect(Math.abs(clock.now() - local.t)).toBeLessThan(1_000);
    expect(changes).toHaveLength(2);
  });

  it('ignores answers it cannot read, and requests across a backward jump', () => {
    const { local, clock } = setup();
    clock.observeDateHeader('not a date', local.t, local.t + 1);
    clock.observeDateHeader(undefined, local.t, local.t + 1);
    clock.observeServerTime(local.t + DAY, local.t, local.t - 5);
    expect(clock.measured).toBe(false);
    expect(clock.offsetMs).toBe(0);
  });

  it('describes an offset in words', () => {
    expect(describeOffset(DAY)).toBe('24.0 h behind');
    expect(describeOffset(-3 * DAY)).toBe('3.0 days ahead of');
    expect(describeOffset(-6 * 60_000)).toBe('6 min ahead of');
    expect(describeOffset(1_500)).toBe('1.5 s behind');
  });
});

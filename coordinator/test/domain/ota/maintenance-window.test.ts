import { describe, expect, it } from 'vitest';
import type { MaintenanceWindow } from '../../../src/domain/model/applications.js';
import {
  checkMaintenanceWindow,
  MAX_WINDOW_MINUTES,
  nextWindows,
  previewWindow,
  sameWindow,
  windowState,
} from '../../../src/domain/ota/maintenance-window.js';

const at = (iso: string) => Date.parse(iso);
const w = (cron: string, timezone: string, durationMinutes: number): MaintenanceWindow => ({
  cron,
  timezone,
  durationMinutes,
});

describe('the state of a maintenance window at an instant', () => {
  const nightly = w('0 2 * * *', 'UTC', 120);

  it('is open from an occurrence for its duration, the end excluded', () => {
    expect(windowState(nightly, at('2026-03-10T02:00:00.000Z'))).toEqual({
      open: true,
      closesAt: at('2026-03-10T04:00:00.000Z'),
    });
    expect(windowState(nightly, at('2026-03-10T03:59:59.999Z'))).toMatchObject({ open: true });
    expect(windowState(nightly, at('2026-03-10T04:00:00.000Z'))).toEqual({
      open: false,
      opensAt: at('2026-03-11T02:00:00.000Z'),
    });
  });

  it('is closed before the occurrence, and says when it opens next', () => {
    expect(windowState(nightly, at('2026-03-10T01:59:59.000Z'))).toEqual({
      open: false,
      opensAt: at('2026-03-10T02:00:00.000Z'),
    });
    expect(windowState(nightly, at('2026-03-10T12:00:00.000Z'))).toEqual({
      open: false,
      opensAt: at('2026-03-11T02:00:00.000Z'),
    });
  });

  it('reads the expression in the window’s zone', () => {
    // 02:00 in Berlin is 01:00 UTC in winter (CET) and 00:00 UTC in summer (CEST).
    const berlin = w('0 2 * * *', 'Europe/Berlin', 60);
    expect(windowState(berlin, at('2026-01-15T01:30:00.000Z'))).toEqual({
      open: true,
      closesAt: at('2026-01-15T02:00:00.000Z'),
    });
    expect(windowState(berlin, at('2026-07-15T00:30:00.000Z'))).toMatchObject({ open: true });
    expect(windowState(berlin, at('2026-07-15T01:30:00.000Z'))).toEqual({
      open: false,
      opensAt: at('2026-07-16T00:00:00.000Z'),
    });
  });

  it('opens at the next valid instant on the night the clocks skip its local time (spring)', () => {
    // Europe/Berlin, 2026-03-29: 02:00 CET jumps to 03:00 CEST; `30 2 * * *` opens at 03:00 CEST (01:00 UTC).
    const skipped = w('30 2 * * *', 'Europe/Berlin', 60);
    expect(windowState(skipped, at('2026-03-29T00:59:00.000Z'))).toEqual({
      open: false,
      opensAt: at('2026-03-29T01:00:00.000Z'),
    });
    expect(windowState(skipped, at('2026-03-29T01:30:00.000Z'))).toEqual({
      open: true,
      closesAt: at('2026-03-29T02:00:00.000Z'),
    });
  });

  it('opens once, the first time, on the night the clocks repeat its local time (autumn)', () => {
    // Europe/Berlin, 2026-10-25: 03:00 CEST goes back to 02:00 CET; 02:30 happens twice.
    const repeated = w('30 2 * * *', 'Europe/Berlin', 30);
    const first = at('2026-10-25T00:30:00.000Z'); // 02:30 CEST
    expect(windowState(repeated, first)).toEqual({ open: true, closesAt: first + 30 * 60_000 });
    // The second 02:30 (CET, 01:30 UTC) opens nothing: the next window is the next night's.
    expect(windowState(repeated, at('2026-10-25T01:40:00.000Z'))).toEqual({
      open: false,
      opensAt: at('2026-10-26T01:30:00.000Z'),
    });
  });

  it('is open throughout when each window lasts longer than the interval between them', () => {
    // Every hour for 90 minutes: always open; the latest window closes 90 minutes after it opened.
    const overlapping = w('0 * * * *', 'UTC', 90);
    for (const iso of ['2026-03-10T10:00:00.000Z', '2026-03-10T10:59:00.000Z', '2026-03-10T11:20:00.000Z']) {
      expect(windowState(overlapping, at(iso)).open, iso).toBe(true);
    }
    expect(windowState(overlapping, at('2026-03-10T11:20:00.000Z'))).toEqual({
      open: true,
      closesAt: at('2026-03-10T12:30:00.000Z'),
    });
    // Weekdays at 22:00 for two days: open from Friday 22:00 to Sunday 22:00, closed until Monday's.
    const weekend = w('0 22 * * 1-5', 'UTC', 2 * 24 * 60);
    expect(windowState(weekend, at('2026-03-14T12:00:00.000Z'))).toMatchObject({ open: true }); // Saturday
    expect(windowState(weekend, at('2026-03-15T23:00:00.000Z'))).toEqual({
      open: false,
      opensAt: at('2026-03-16T22:00:00.000Z'),
    });
  });
});

describe('the next windows', () => {
  it('lists the open window first, then the next ones, with their local opening', () => {
    const berlin = w('0 2 * * *', 'Europe/Berlin', 120);
    expect(nextWindows(berlin, at('2026-01-15T02:00:00.000Z'))).toEqual([
      {
        opensAt: '2026-01-15T01:00:00.000Z',
        closesAt: '2026-01-15T03:00:00.000Z',
        localOpensAt: '2026-01-15T02:00:00+01:00',
      },
      {
        opensAt: '2026-01-16T01:00:00.000Z',
        closesAt: '2026-01-16T03:00:00.000Z',
        localOpensAt: '2026-01-16T02:00:00+01:00',
      },
      {
        opensAt: '2026-01-17T01:00:00.000Z',
        closesAt: '2026-01-17T03:00:00.000Z',
        localOpensAt: '2026-01-17T02:00:00+01:00',
      },
    ]);
    expect(nextWindows(berlin, at('2026-01-15T12:00:00.000Z')).map((x) => x.opensAt)).toEqual([
      '2026-01-16T01:00:00.000Z',
      '2026-01-17T01:00:00.000Z',
      '2026-01-18T01:00:00.000Z',
    ]);
  });

  it('follows a change of the clocks', () => {
    const berlin = w('0 2 * * *', 'Europe/Berlin', 60);
    expect(nextWindows(berlin, at('2026-03-27T12:00:00.000Z')).map((x) => x.localOpensAt)).toEqual([
      '2026-03-28T02:00:00+01:00',
      '2026-03-29T03:00:00+02:00', // 02:00 does not exist that night
      '2026-03-30T02:00:00+02:00',
    ]);
  });
});

describe('checking a maintenance window', () => {
  it('normalizes the expression and the zone', () => {
    expect(
      checkMaintenanceWindow({ cron: ' 0  2 * * *', timezone: 'europe/berlin', durationMinutes: 120 }, 'b'),
    ).toEqual({ ok: true, window: w('0 2 * * *', 'Europe/Berlin', 120) });
  });

  it('names each field refused, saying what was expected and what was got', () => {
    const check = checkMaintenanceWindow({ cron: '0 2 * *', timezone: 'Mars/Olympus', durationMinutes: 0 }, 'body.w');
    expect(check).toEqual({
      ok: false,
      problems: [
        { path: 'body.w.cron', message: expect.stringMatching(/5-field cron expression .*got 4 field/) },
        { path: 'body.w.timezone', message: expect.stringMatching(/IANA time zone .*got `Mars\/Olympus`/) },
        { path: 'body.w.durationMinutes', message: expect.stringMatching(/from 1 to 10080 .*got `0`/) },
      ],
    });
    for (const durationMinutes of [-5, 1.5, MAX_WINDOW_MINUTES + 1]) {
      const c = checkMaintenanceWindow({ cron: '0 2 * * *', timezone: 'UTC', durationMinutes }, 'b');
      expect(c.ok, String(durationMinutes)).toBe(false);
    }
    expect(checkMaintenanceWindow({ cron: '0 0 31 2 *', timezone: 'UTC', durationMinutes: 5 }, 'b')).toMatchObject({
      ok: false,
      problems: [{ path: 'b.cron', message: expect.stringMatching(/never fires/) }],
    });
    expect(checkMaintenanceWindow(w('0 2 * * *', 'UTC', MAX_WINDOW_MINUTES), 'b').ok).toBe(true);
  });

  it('previews a window, or refuses it with a 422', () => {
    expect(previewWindow(w('0 2 * * *', 'utc', 60), 'q', at('2026-01-15T12:00:00.000Z'))).toMatchObject({
      maintenanceWindow: w('0 2 * * *', 'UTC', 60),
      nextWindows: [{ opensAt: '2026-01-16T02:00:00.000Z' }, {}, {}],
    });
    expect(() => previewWindow(w('nope', 'UTC', 60), 'q', 0)).toThrow(
      expect.objectContaining({ statusCode: 422, details: [expect.objectContaining({ path: 'q.cron' })] }),
    );
  });

  it('tells two windows apart', () => {
    expect(sameWindow(null, null)).toBe(true);
    expect(sameWindow(w('0 2 * * *', 'UTC', 60), w('0 2 * * *', 'UTC', 60))).toBe(true);
    expect(sameWindow(w('0 2 * * *', 'UTC', 60), w('0 2 * * *', 'UTC', 61))).toBe(false);
    expect(sameWindow(w('0 2 * * *', 'UTC', 60), null)).toBe(false);
  });
});

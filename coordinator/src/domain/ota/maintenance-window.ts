import { describeValue } from '@drover/shared';
import { validationFailed, type ValidationDetail } from '../../errors.js';
import { CronSchedules, localIso } from '../cron/schedule.js';
import { canonicalTimeZone, checkCronExpression } from '../cron/triggers-cron.js';
import type { MaintenanceWindow } from '../model/applications.js';
import { isoAt } from '../../util/clock.js';

/**
 * Maintenance windows of applications (docs/ota.md, "Maintenance windows"): a window opens at each
 * occurrence of a 5-field cron expression read in an IANA time zone, with the rules of cron
 * triggers (docs/schedules.md: the same parser, croner, and the same daylight-saving rules: a local
 * time that does not exist opens the window at the next valid instant, one that occurs twice opens
 * it once, the first time), and stays open `durationMinutes`. Windows may overlap (a duration
 * longer than the interval): the time is inside a window while it is inside any of them.
 */

/** The longest window: 7 days. */
export const MAX_WINDOW_MINUTES = 7 * 24 * 60;
/** How many windows the application view shows. */
export const NEXT_WINDOWS_SHOWN = 3;

/** Schedules shared by the applications (and answers) that use the same expression and zone. */
const schedules = new CronSchedules(1_000);

/** Whether a window is open at an instant, and when that changes. */
export type WindowState =
  /** Open: `closesAt` is the end of the latest window that opened (another may open before it). */
  | { open: true; closesAt: number }
  /** Closed: `opensAt` is the next opening, null when there is none (a validated expression always has one). */
  | { open: false; opensAt: number | null };

const MEMO_SIZE = 64;
/** Recent answers: an evaluation of many bindings of one application asks the same question for each. */
const memo = new Map<string, WindowState>();

/** The window's state at `now` (Unix ms). */
export function windowState(window: MaintenanceWindow, now: number): WindowState {
  const key = `${window.timezone}\n${window.cron}\n${window.durationMinutes}\n${now}`;
  const known = memo.get(key);
  if (known) return known;
  const schedule = schedules.get(window.cron, window.timezone);
  const length = window.durationMinutes * 60_000;
  // Open when a window opened at or before now and less than its length ago.
  const [latest] = schedule.latestOnes(now, now - length, 1);
  const state: WindowState =
    latest === undefined ? { open: false, opensAt: schedule.next(now) } : { open: true, closesAt: latest + length };
  if (memo.size >= MEMO_SIZE) memo.clear();
  memo.set(key, state);
  return state;
}

/** A window as the API shows it: UTC instants, and its opening in the local time of the zone. */
export interface WindowView {
  opensAt: string;
  closesAt: string;
  /** The opening in the window's zone, with its offset (`2025-03-30T03:00:00+02:00`). */
  localOpensAt: string;
}

/**
 * The windows that have not ended at `now`, oldest first, `count` in all: the one open now (the
 * latest to open, when several overlap), then the next ones.
 */
export function nextWindows(window: MaintenanceWindow, now: number, count = NEXT_WINDOWS_SHOWN): WindowView[] {
  const schedule = schedules.get(window.cron, window.timezone);
  const length = window.durationMinutes * 60_000;
  const state = windowState(window, now);
  const opens = state.open ? [state.closesAt - length] : [];
  opens.push(...schedule.nextOnes(now, count - opens.length));
  return opens.map((at) => ({
    opensAt: isoAt(at),
    closesAt: isoAt(at + length),
    localOpensAt: localIso(at, window.timezone),
  }));
}

/** A window as a request gives it (the route's schema checked the types). */
export interface MaintenanceWindowInput {
  cron: string;
  timezone: string;
  durationMinutes: number;
}

/**
 * Checks a window: the expression as a cron trigger's (`checkCronExpression`), an IANA zone, a
 * whole number of minutes from 1 to MAX_WINDOW_MINUTES. Gives the window normalized (the
 * expression's fields separated by one space, the zone's canonical name) or one detail per field
 * refused, under `path` (`body.maintenanceWindow`).
 */
export function checkMaintenanceWindow(
  input: MaintenanceWindowInput,
  path: string,
): { ok: true; window: MaintenanceWindow } | { ok: false; problems: ValidationDetail[] } {
  const problems: ValidationDetail[] = [];
  const cron = checkCronExpression(input.cron);
  if (!cron.ok) problems.push({ path: `${path}.cron`, message: cron.reason });
  const timezone = canonicalTimeZone(input.timezone);
  if (timezone === null) {
    problems.push({
      path: `${path}.timezone`,
      message: `must be an IANA time zone name such as "Europe/Berlin" or "UTC", got ${describeValue(input.timezone)}`,
    });
  }
  const minutes = input.durationMinutes;
  if (!Number.isInteger(minutes) || minutes < 1 || minutes > MAX_WINDOW_MINUTES) {
    problems.push({
      path: `${path}.durationMinutes`,
      message: `must be a whole number of minutes from 1 to ${MAX_WINDOW_MINUTES} (7 days), got ${describeValue(minutes)}`,
    });
  }
  if (!cron.ok || timezone === null || problems.length > 0) return { ok: false, problems };
  return { ok: true, window: { cron: cron.expression, timezone, durationMinutes: minutes } };
}

/** Whether two windows are the same (null: none). */
export const sameWindow = (a: MaintenanceWindow | null, b: MaintenanceWindow | null): boolean =>
  a === b ||
  (a !== null &&
    b !== null &&
    a.cron === b.cron &&
    a.timezone === b.timezone &&
    a.durationMinutes === b.durationMinutes);

/**
 * The windows a window would have (the window editor shows them as the operator types): the
 * window normalized and its next windows at `now`, or 422 naming each field refused under `path`.
 */
export function previewWindow(
  input: MaintenanceWindowInput,
  path: string,
  now: number,
): { maintenanceWindow: MaintenanceWindow; nextWindows: WindowView[] } {
  const check = checkMaintenanceWindow(input, path);
  if (!check.ok) throw validationFailed(check.problems);
  return { maintenanceWindow: check.window, nextWindows: nextWindows(check.window, now) };
}

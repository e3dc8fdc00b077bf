import { Cron } from 'croner';

/**
 * The occurrences of a cron schedule: a 5-field expression read in an IANA time zone
 * (docs/schedules.md). Daylight-saving changes:
 *
 * - a local time that does not exist (the hour skipped in spring) fires once, at the next valid
 *   instant (02:30 on a day whose clocks jump from 02:00 to 03:00 fires at 03:00);
 * - a local time that occurs twice (the hour repeated in autumn) fires once, the first time.
 *
 * croner finds the candidate instants; both rules are applied here. croner moves a skipped local
 * time to the next valid instant only for an expression of one minute and one hour (`30 2 * * *`),
 * and drops it for the others (`0,30 2 * * *`, `* 2 * * *`, `30 1-2 * * *`): so when the clocks
 * jump forward before croner's candidate, the skipped local times are matched against the
 * expression on the wall clock, and a match fires at the jump. croner also fires a repeated local
 * time twice for expressions whose hour field matches it (`*\/30 * * * *`).
 */

const MEMO_SIZE = 16;

export class CronSchedule {
  private readonly cron: Cron;
  /** The expression on a wall clock without a zone (UTC): whether a skipped local time matches. */
  private wallClock: Cron | null = null;
  /** Recent answers of `next`: triggers sharing this schedule ask for the same instants in turn. */
  private readonly memo = new Map<number, number | null>();
  /**
   * The last answer of `next` and the instant it was asked after: every instant from `from` up to
   * (not including) `at` has the same next occurrence. A view asks after "now", which moves at
   * each request, and a rare schedule (`0 0 29 2 *`) costs croner tens of milliseconds a search.
   */
  private span: { from: number; at: number | null } | null = null;

  constructor(
    readonly expression: string,
    readonly zone: string,
  ) {
    this.cron = new Cron(expression, { paused: true, mode: '5-part', timezone: zone });
  }

  /** The first occurrence strictly after `afterMs` (Unix ms), or null when there is none. */
  next(afterMs: number): number | null {
    const span = this.span;
    if (span !== null && afterMs >= span.from && (span.at === null || afterMs < span.at)) return span.at;
    const known = this.memo.get(afterMs);
    if (known !== undefined) return known;
    const next = this.compute(afterMs);
    if (this.memo.size >= MEMO_SIZE) this.memo.clear();
    this.memo.set(afterMs, next);
    this.span = { from: afterMs, at: next };
    return next;
  }

  private compute(afterMs: number): number | null {
    let after = afterMs;
    // A repeated local time is skipped; a handful of them can follow one another (every minute of
    // the repeated hour for `* * * * *`), so loop, boundedly.
    for (let i = 0; i < 200; i++) {
      const next = this.cron.nextRun(new Date(after));
      if (next === null) return null;
      const at = next.getTime();
      const jump = firstJumpForward(after, at, this.zone);
      if (jump !== null && this.matchesWallClock(jump.at + jump.fromOffsetMs, jump.at + jump.toOffsetMs)) {
        return jump.at;
      }
      if (!isRepeatedLocalTime(at, this.zone)) return at;
      after = at;
    }
    return null;
  }

  /** Whether the expression matches a wall-clock time in [fromMs, toMs) (local times written as UTC). */
  private matchesWallClock(fromMs: number, toMs: number): boolean {
    this.wallClock ??= new Cron(this.expression, { paused: true, mode: '5-part', timezone: 'UTC' });
    // nextRun looks strictly after its reference, in whole seconds: a second before the range.
    const match = this.wallClock.nextRun(new Date(fromMs - 1000));
    return match !== null && match.getTime() < toMs;
  }

  /** Up to `count` occurrences strictly after `afterMs`, in order. */
  nextOnes(afterMs: number, count: number): number[] {
    const found: number[] = [];
    let after = afterMs;
    while (found.length < count) {
      const next = this.next(after);
      if (next === null) break;
      found.push(next);
      after = next;
    }
    return found;
  }

  /** Up to `count` occurrences at or before `atMs` and strictly after `afterMs`, newest first. */
  latestOnes(atMs: number, afterMs: number, count: number): number[] {
    const found = this.latestByCroner(atMs, afterMs, count);
    // The skipped local times croner drops fire at their jump (as `next` has it).
    const jumps = this.jumpOccurrences(afterMs, atMs).filter((at) => !found.includes(at));
    if (jumps.length === 0) return found;
    return [...found, ...jumps].sort((a, b) => b - a).slice(0, count);
  }

  /** The instants in (afterMs, atMs] at which the clocks jump forward over a time this schedule matches. */
  private jumpOccurrences(afterMs: number, atMs: number): number[] {
    const found: number[] = [];
    for (let from = afterMs; ;) {
      const jump = firstJumpForward(from, atMs, this.zone);
      if (jump === null) return found;
      if (this.matchesWallClock(jump.at + jump.fromOffsetMs, jump.at + jump.toOffsetMs)) found.push(jump.at);
      from = jump.at;
    }
  }

  private latestByCroner(atMs: number, afterMs: number, count: number): number[] {
    const found: number[] = [];
    // previousRuns looks strictly before its reference; croner works in whole seconds.
    let before = Math.floor(atMs / 1000) * 1000 + 1000;
    while (found.length < count) {
      const batch = this.cron.previousRuns(Math.min(count - found.length + 4, 64), new Date(before));
      if (batch.length === 0) return found;
      for (const date of batch) {
        const at = date.getTime();
        if (at <= afterMs) return found;
        before = at;
        if (at <= atMs && !isRepeatedLocalTime(at, this.zone) && found.length < count) found.push(at);
      }
    }
    return found;
  }
}

/** Schedules by expression and zone: triggers that share a schedule share its object. */
export class CronSchedules {
  private readonly byKey = new Map<string, CronSchedule>();

  constructor(private readonly maxEntries = 10_000) {}

  get(expression: string, zone: string): CronSchedule {
    const key = `${zone}\n${expression}`;
    let schedule = this.byKey.get(key);
    if (!schedule) {
      if (this.byKey.size >= this.maxEntries) this.byKey.clear();
      schedule = new CronSchedule(expression, zone);
      this.byKey.set(key, schedule);
    }
    return schedule;
  }

  /**
   * Up to `count` occurrences of a stored schedule strictly after `afterMs`; none when it does not
   * parse (a damaged or hand-edited database, or a value stored before a parser that refuses it:
   * the scheduler leaves such a trigger out, docs/schedules.md), so that what shows the trigger
   * still answers, with no next run.
   */
  upcoming(expression: string, zone: string, afterMs: number, count: number): number[] {
    try {
      return this.get(expression, zone).nextOnes(afterMs, count);
    } catch {
      return [];
    }
  }
}

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(zone: string): Intl.DateTimeFormat {
  let format = formatters.get(zone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formatters.set(zone, format);
  }
  return format;
}

/** The zone's offset from UTC at an instant, in ms (Europe/Paris in summer: 7,200,000). */
export function zoneOffsetMs(atMs: number, zone: string): number {
  const parts: Record<string, number> = {};
  for (const part of formatter(zone).formatToParts(new Date(atMs))) {
    if (part.type !== 'literal') parts[part.type] = Number(part.value);
  }
  const local = Date.UTC(parts.year!, parts.month! - 1, parts.day!, parts.hour!, parts.minute!, parts.second!);
  return local - Math.floor(atMs / 1000) * 1000;
}

const DAY_MS = 86_400_000;

/** A moment the zone's clocks jump forward, with the offsets before and after it. */
export interface JumpForward {
  at: number;
  fromOffsetMs: number;
  toOffsetMs: number;
}

/** Each zone's jumps forward, by UTC year: found once per zone and year, then looked up. */
const jumpsByZoneYear = new Map<string, readonly JumpForward[]>();
const MAX_ZONE_YEARS = 2_000;

/**
 * The zone's jumps forward in a UTC year: the offset sampled a day apart (no zone changes its
 * clocks twice in a day), and each change upward narrowed to the second.
 */
function jumpsForwardIn(zone: string, year: number): readonly JumpForward[] {
  const key = `${zone}\n${year}`;
  const known = jumpsByZoneYear.get(key);
  if (known) return known;
  const jumps: JumpForward[] = [];
  const end = Date.UTC(year + 1, 0, 1);
  let lo = Date.UTC(year, 0, 1);
  let loOffset = zoneOffsetMs(lo, zone);
  while (lo < end) {
    const hi = Math.min(lo + DAY_MS, end);
    const hiOffset = zoneOffsetMs(hi, zone);
    if (hiOffset > loOffset) {
      // The first second in (lo, hi] with the later offset.
      let [from, to] = [lo / 1000, hi / 1000];
      while (to - from > 1) {
        const mid = Math.floor((from + to) / 2);
        if (zoneOffsetMs(mid * 1000, zone) === loOffset) from = mid;
        else to = mid;
      }
      jumps.push({ at: to * 1000, fromOffsetMs: loOffset, toOffsetMs: hiOffset });
    }
    lo = hi;
    loOffset = hiOffset;
  }
  if (jumpsByZoneYear.size >= MAX_ZONE_YEARS) jumpsByZoneYear.clear();
  jumpsByZoneYear.set(key, jumps);
  return jumps;
}

/** The first instant in (afterMs, beforeMs] at which the zone's clocks jump forward, or null. */
export function firstJumpForward(afterMs: number, beforeMs: number, zone: string): JumpForward | null {
  if (zone === 'UTC' || beforeMs <= afterMs) return null;
  const last = new Date(beforeMs).getUTCFullYear();
  for (let year = new Date(afterMs).getUTCFullYear(); year <= last; year++) {
    for (const jump of jumpsForwardIn(zone, year)) {
      if (jump.at > beforeMs) return null;
      if (jump.at > afterMs) return jump;
    }
  }
  return null;
}

/** The longest look-back for a clock change: no zone moves its clocks back by more than this. */
const MAX_SHIFT_MS = 3 * 3_600_000;

/**
 * Whether the local time at `atMs` already occurred earlier (the clocks went back by Δ within
 * the last Δ: the instant Δ before showed the same wall-clock time).
 */
export function isRepeatedLocalTime(atMs: number, zone: string): boolean {
  if (zone === 'UTC') return false;
  const offset = zoneOffsetMs(atMs, zone);
  const earlier = zoneOffsetMs(atMs - MAX_SHIFT_MS, zone);
  if (earlier <= offset) return false;
  const shift = earlier - offset;
  return zoneOffsetMs(atMs - shift, zone) === offset + shift;
}

/** An instant as the local time of a zone, ISO 8601 with its offset (`2025-03-30T03:00:00+02:00`). */
export function localIso(atMs: number, zone: string): string {
  const offset = zoneOffsetMs(atMs, zone);
  const local = new Date(atMs + offset).toISOString().slice(0, 19);
  const sign = offset < 0 ? '-' : '+';
  const minutes = Math.abs(offset) / 60_000;
  const hh = String(Math.floor(minutes / 60)).padStart(2, '0');
  const mm = String(minutes % 60).padStart(2, '0');
  return `${local}${sign}${hh}:${mm}`;
}

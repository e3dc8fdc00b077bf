import {
  RATE_WINDOWS,
  type LimitDecision,
  type LimitRefusal,
  type LimitRefused,
  type RateLimits,
  type RateWindow,
  type ReadWindowCounts,
  type WindowCounts,
  type WindowStarts,
} from '../model/rate-limits.js';
import type { LimitedAdmission } from '../model/trigger-runs.js';

/**
 * Workflow and token job limits (docs/trigger-runs.md, "Rate limits"): fixed windows aligned to the UTC
 * minute, hour and day, counting the calls that were dispatched in each (refused calls do not
 * count). A call is refused when, in any window that has a limit, the calls already dispatched
 * reach that limit. Pure functions over counts the admission transaction reads.
 */

export const WINDOW_MS: Readonly<Record<RateWindow, number>> = {
  minute: 60_000,
  hour: 3_600_000,
  day: 86_400_000,
};

export function windowStarts(now: number): WindowStarts {
  return {
    minute: now - (now % WINDOW_MS.minute),
    hour: now - (now % WINDOW_MS.hour),
    day: now - (now % WINDOW_MS.day),
  };
}

export const ZERO_COUNTS: Readonly<WindowCounts> = Object.freeze({ minute: 0, hour: 0, day: 0 });

const LIMIT_OF: Readonly<Record<RateWindow, keyof RateLimits>> = {
  minute: 'perMinute',
  hour: 'perHour',
  day: 'perDay',
};

export const hasAnyLimit = (limits: RateLimits): boolean =>
  limits.perMinute !== null || limits.perHour !== null || limits.perDay !== null;

/** Null when one more call fits every window, else the refusal. */
export function checkLimits(limits: RateLimits, counts: WindowCounts, now: number): LimitRefusal | null {
  for (let i = RATE_WINDOWS.length - 1; i >= 0; i--) {
    const window = RATE_WINDOWS[i]!;
    const limit = limits[LIMIT_OF[window]];
    if (limit !== null && counts[window] >= limit) {
      return { window, limit, observed: counts[window], counts, limits, retryAfter: retryAfterSeconds(window, now) };
    }
  }
  return null;
}

/** Whole seconds from `now` until the current `window` ends, at least 1. */
export function retryAfterSeconds(window: RateWindow, now: number): number {
  const end = now - (now % WINDOW_MS[window]) + WINDOW_MS[window];
  return Math.max(1, Math.ceil((end - now) / 1000));
}

const THIS: Readonly<Record<RateWindow, string>> = { minute: 'this minute', hour: 'this hour', day: 'today' };

const countsText = (counts: WindowCounts, limits: RateLimits, noun: string) =>
  RATE_WINDOWS.map((w) => {
    const limit = limits[LIMIT_OF[w]];
    return `${counts[w]} ${noun}${counts[w] === 1 ? '' : 's'} ${THIS[w]} (${limit === null ? 'no limit' : `limit ${limit}`})`;
  }).join(', ');

/** The message of a token-limit 429 and of the rejected job it leaves. */
export function tokenLimitMessage(refusal: LimitRefusal): string {
  return (
    `API token rate limit exceeded for the ${refusal.window}: ` +
    `${countsText(refusal.counts, refusal.limits, 'job')}; retry in ${refusal.retryAfter} s`
  );
}

/** The message of a workflow-limit 429 and of the rejected job it leaves: names the workflow and the counts. */
export function workflowLimitMessage(workflowName: string, refusal: LimitRefusal): string {
  return (
    `Rate limit of workflow \`${workflowName}\` exceeded for the ${refusal.window}: ` +
    countsText(refusal.counts, refusal.limits, 'run')
  );
}

/** The spec's "general" 429 body (token limit). */
export interface TokenLimitBody {
  statusCode: 429;
  code: 'rate_limited';
  message: string;
  retryAfter: number;
}

/** The spec's workflow-level 429 body. */
export interface WorkflowLimitBody {
  statusCode: 429;
  code: 'rate_limited';
  message: string;
  window: RateWindow;
}

export const tokenLimitBody = (refusal: LimitRefusal): TokenLimitBody => ({
  statusCode: 429,
  code: 'rate_limited',
  message: tokenLimitMessage(refusal),
  retryAfter: refusal.retryAfter,
});

export const workflowLimitBody = (workflowName: string, refusal: LimitRefusal): WorkflowLimitBody => ({
  statusCode: 429,
  code: 'rate_limited',
  message: workflowLimitMessage(workflowName, refusal),
  window: refusal.window,
});

/**
 * The token's limit first, then the workflow's (unless the run is forced: a forced run bypasses
 * the workflow limit but still counts against it). Only scopes with a limit are read and counted
 * (one counter write fewer per call on the hot path): a limit set on a workflow starts counting
 * when it is set; token limits are fixed at issue.
 */
export function decideLimits(request: LimitedAdmission, readCounts: ReadWindowCounts): LimitDecision {
  const { job, now, token, workflowLimits } = request;
  const windows = windowStarts(now);
  const counted: LimitDecision['counted'] = [];
  let refused: LimitRefused | null = null;
  if (token !== null && hasAnyLimit(token.limits)) {
    counted.push({ scope: 'token', id: token.id });
    const refusal = checkLimits(token.limits, readCounts('token', token.id, windows), now);
    if (refusal) refused = { scope: 'token', refusal, message: tokenLimitMessage(refusal) };
  }
  if (hasAnyLimit(workflowLimits)) {
    counted.push({ scope: 'workflow', id: job.workflowId });
    if (!refused && !job.forced) {
      const refusal = checkLimits(workflowLimits, readCounts('workflow', job.workflowId, windows), now);
      if (refusal) refused = { scope: 'workflow', refusal, message: workflowLimitMessage(job.workflowName, refusal) };
    }
  }
  return { windows, refused, counted, pastBefore: previousWindows(windows) };
}

/** The start of the window before each of `windows`. */
function previousWindows(windows: WindowStarts): WindowStarts {
  return {
    minute: windows.minute - WINDOW_MS.minute,
    hour: windows.hour - WINDOW_MS.hour,
    day: windows.day - WINDOW_MS.day,
  };
}

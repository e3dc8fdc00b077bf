/** Job limits of an API token or a workflow: at most this many runs per window (null: no limit). */
export interface RateLimits {
  perMinute: number | null;
  perHour: number | null;
  perDay: number | null;
}

/** The fixed windows of a rate limit, aligned to the UTC minute, hour and day (docs/trigger-runs.md, "Rate limits"). */
export const RATE_WINDOWS = ['minute', 'hour', 'day'] as const;
export type RateWindow = (typeof RATE_WINDOWS)[number];

/** Unix ms of the start of each window containing `now` (Unix time has no leap seconds, so these are UTC-aligned). */
export interface WindowStarts {
  minute: number;
  hour: number;
  day: number;
}

/** Calls dispatched so far in each current window. */
export interface WindowCounts {
  minute: number;
  hour: number;
  day: number;
}

/** Why a limit refused a call: the window, its limit and count, and when it resets. */
export interface LimitRefusal {
  /** The window that refused the call; when several did, the longest (it resets last). */
  window: RateWindow;
  limit: number;
  /** Calls dispatched in that window before this one (at least `limit`). */
  observed: number;
  /** Every window's count, for messages. */
  counts: WindowCounts;
  limits: RateLimits;
  /** Whole seconds until `window` resets (at least 1). */
  retryAfter: number;
}

/** A limit that refused a call: whose, why, and the rejected job's message. */
export interface LimitRefused {
  scope: 'token' | 'workflow';
  refusal: LimitRefusal;
  message: string;
}

/** The limits' verdict on one admission, decided on the counts read inside its transaction. */
export interface LimitDecision {
  /** The windows the call falls in. */
  windows: WindowStarts;
  /**
   * Counters of windows that began before these are past, and may be purged: the previous window
   * of each kind is kept, as another coordinator whose clock is a little behind still counts in it.
   */
  pastBefore: WindowStarts;
  /** The limit that refused the call, or null. */
  refused: LimitRefused | null;
  /** The counters an admitted call adds one to: only scopes with a limit are counted. */
  counted: Array<{ scope: 'token' | 'workflow'; id: string }>;
}

/** Reads one scope's counts in the given windows, inside the admission's transaction. */
export type ReadWindowCounts = (scope: 'token' | 'workflow', id: string, windows: WindowStarts) => WindowCounts;

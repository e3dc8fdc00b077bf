import type { Clock } from '../../util/clock.js';
import { noMetrics, type Metrics } from '../metrics.js';

export type ReadDecision =
  | { allowed: true }
  | {
      allowed: false;
      window: 'minute';
      limit: number;
      /** Calls counted in this window, this one included. */
      observed: number;
      /** Seconds until the window resets. */
      retryAfter: number;
      /** True for the first refusal of this token in this window (the one that is audited). */
      firstBlock: boolean;
    };

/**
 * The token discovery read limit (docs/errors.md, "The three 429 shapes"): a fixed window aligned to the UTC minute, per
 * token, counted in this process's memory (the spec says each instance keeps its own count).
 */
export class ReadRateLimiter {
  private windowStart = 0;
  private counts = new Map<string, number>();

  constructor(
    private readonly perMinute: number,
    private readonly clock: Clock,
    private readonly metrics: Pick<Metrics, 'rateLimitBlocked'> = noMetrics,
  ) {}

  hit(tokenId: string): ReadDecision {
    const now = this.clock.now();
    const windowStart = now - (now % 60_000);
    if (windowStart !== this.windowStart) {
      // A new minute: every count starts over, so the map never outgrows one minute's tokens.
      this.windowStart = windowStart;
      this.counts = new Map();
    }
    const observed = (this.counts.get(tokenId) ?? 0) + 1;
    this.counts.set(tokenId, observed);
    if (observed <= this.perMinute) return { allowed: true };
    this.metrics.rateLimitBlocked('token_read');
    return {
      allowed: false,
      window: 'minute',
      limit: this.perMinute,
      observed,
      retryAfter: Math.max(1, Math.ceil((windowStart + 60_000 - now) / 1000)),
      firstBlock: observed === this.perMinute + 1,
    };
  }
}

export type ReadRefusal = Extract<ReadDecision, { allowed: false }>;

/** The 429 body for the token discovery read limit (docs/errors.md, "The three 429 shapes"). */
export interface ReadLimitBody {
  statusCode: 429;
  error: 'Too Many Requests';
  message: string;
  scope: 'token_read';
  window: 'minute';
  limit: number;
  observed: number;
}

export function readLimitBody(refusal: ReadRefusal): ReadLimitBody {
  return {
    statusCode: 429,
    error: 'Too Many Requests',
    message: `Token read limit exceeded: ${refusal.observed} requests this ${refusal.window}, limit ${refusal.limit}`,
    scope: 'token_read',
    window: refusal.window,
    limit: refusal.limit,
    observed: refusal.observed,
  };
}
